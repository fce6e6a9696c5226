import { LRUCache, type Perf } from "lru-cache";
import type { Link } from "./person";

export type LinkCache = LRUCache<string, Link>;

/**
 * Links by distinct ID, for events that change nothing. An entry is served up to `ttlMs` after it was set and
 * never later, however often it is read (that is the staleness bound); past `capacity` the least recently used
 * goes first.
 *
 * lru-cache rather than a Map in set order: evicting a Map's first key walks past every entry deleted before
 * it (JavaScriptCore keeps them until a rehash), which made new-visitor traffic quadratic once the cache was
 * full (100,000 new IDs cost 25–34 s in eviction alone at 200,000 entries).
 */
export function linkCache(capacity: number, ttlMs: number, clock: Perf = performance): LinkCache {
  // ttlResolution 0: every read asks the clock, rather than reusing a time up to 1 ms old
  return new LRUCache<string, Link>({
    max: capacity,
    ttl: ttlMs,
    ttlResolution: 0,
    ttlAutopurge: false,
    updateAgeOnGet: false,
    perf: clock,
  });
}
