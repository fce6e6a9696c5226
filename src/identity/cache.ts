import { LRUCache, type Perf } from "lru-cache";
import type { Component } from "./component";
import type { Link } from "./person";

export type LinkCache = LRUCache<string, Link>;
export type PersonCache = LRUCache<string, Component>;

/**
 * Links by distinct ID. An entry is served up to `ttlMs` after it was set and never later, however often it is
 * read (the staleness bound when other processes write too; 0: no expiry); past `capacity` the least recently
 * used goes first.
 *
 * lru-cache rather than a Map in set order: evicting a Map's first key walks past every entry deleted before
 * it (JavaScriptCore keeps them until a rehash), which made new-visitor traffic quadratic once the cache was
 * full (100,000 new IDs cost 25–34 s in eviction alone at 200,000 entries).
 */
export function linkCache(
  capacity: number,
  ttlMs: number,
  { clock = performance, onEvict }: { clock?: Perf; onEvict?: () => void } = {},
): LinkCache {
  // ttlResolution 0: every read asks the clock, rather than reusing a time up to 1 ms old
  return new LRUCache<string, Link>({
    max: capacity,
    ttl: ttlMs,
    ttlResolution: 0,
    ttlAutopurge: false,
    updateAgeOnGet: false,
    perf: clock,
    ...(onEvict && { dispose: (_link: Link, _id: string, reason: string) => reason === "evict" && onEvict() }),
  });
}

/**
 * Sole writer only: each person's facts, folded (`Component`), under every one of its distinct IDs, within about
 * `maxBytes` of memory; past it the least recently used ID goes first. Fill it with `cachePerson`. An evicted
 * ID only means a read the next time an event names it: the person stays whole under its other IDs.
 */
export function personCache(maxBytes: number): PersonCache {
  return new LRUCache<string, Component>({ maxSize: maxBytes });
}

/**
 * Caches a person under each of its IDs, each entry counting its share of the person's size, so a person costs
 * about its size however many IDs it has. The size is measured once, not once an ID.
 */
export function cachePerson(cache: PersonCache, person: Component): void {
  const size = Math.max(1, Math.ceil(person.bytes / person.members.size));
  for (const id of person.members) cache.set(id, person, { size });
}

/**
 * Caches a person read from ClickHouse, if each of its IDs' `stored` link is the one its facts derive: a cached
 * person's links are taken as stored as derived, which a failed write may have left otherwise (the next change
 * reads it again). Whether it was cached.
 */
export function cacheRead(cache: PersonCache, person: Component, stored: (id: string) => Link | undefined): boolean {
  const derived = { personId: person.personId, version: person.linkVersion };
  for (const id of person.members) {
    const link = stored(id);
    if (link === undefined || link.personId !== derived.personId || link.version !== derived.version) return false;
  }
  cachePerson(cache, person);
  return true;
}

/** Components of a flush's facts on the same cached persons, and whether those hold every other fact of theirs. */
export interface CachedGroup {
  readonly parts: Component[];
  readonly cached: Set<Component>;
  complete: boolean;
  /** Whether the flush read any of it before its facts (`Prepared.read`). */
  read: boolean;
}

/**
 * A flush's components grouped by the cached persons their IDs are on (two that share one are one person's), each
 * group complete if every ID is cached (in `persons`, or read by the flush) or certainly new: a sole writer derives a
 * complete group with no read. A group of only new IDs has no cached person: its facts are all there are.
 */
export function groupByCachedPerson(
  parts: readonly Component[],
  read: ReadonlyMap<string, Component | "none">,
  persons: PersonCache | undefined,
): Set<CachedGroup> {
  const groups = new Set<CachedGroup>();
  const groupOf = new Map<Component, CachedGroup>();
  for (const part of parts) {
    const group: CachedGroup = { parts: [part], cached: new Set(), complete: true, read: false };
    groups.add(group);
    for (const id of part.members) {
      const wasRead = read.get(id);
      if (wasRead !== undefined && wasRead !== "none") group.read = true;
      if (wasRead === "none") continue;
      const person = wasRead ?? persons?.get(id);
      if (person === undefined) {
        group.complete = false;
        continue;
      }
      const other = groupOf.get(person);
      if (other !== undefined && other !== group) {
        group.parts.push(...other.parts);
        group.complete &&= other.complete;
        group.read ||= other.read;
        for (const joined of other.cached) {
          group.cached.add(joined);
          groupOf.set(joined, group);
        }
        groups.delete(other);
      }
      group.cached.add(person);
      groupOf.set(person, group);
    }
  }
  return groups;
}
