import type { CapturedEvent } from "../../event";
import type { ClickHouse } from "../clickhouse";
import type { DistinctIdRow, PersonRow } from "../schema";
import { IdentityBatch } from "./batch";
import { type LinkCache, linkCache, type PersonCache, personCache } from "./cache";
import { changesPersons, type PersonIntent, personIntentOf } from "./person-rules";
import { linkRow, loadLinks, loadLinksOfPersons, loadPersons, personRow } from "./person-store";
import { VersionClock } from "./version-clock";

export interface IdentityOptions {
  /**
   * Whether this resolver is the only writer of persons and links in its database. Then its caches hold exactly
   * what is stored: they serve every event and never expire. Otherwise only links are cached, for events that
   * change nothing, and for `cacheTtlMs`.
   */
  readonly soleWriter: boolean;
  /** With other writers: how long a cached link may be used for events that change nothing (the staleness bound). */
  readonly cacheTtlMs: number;
  /** Most links cached. */
  readonly cacheCapacity: number;
  /** Sole writer only: about how much memory cached persons may take. */
  readonly personCacheBytes: number;
}

/** Told how each batch's link reads went: how many came from the cache and how many had to be read. */
export type CacheObserver = (kind: "links" | "persons", hits: number, misses: number) => void;

export const DEFAULT_IDENTITY_OPTIONS: IdentityOptions = {
  soleWriter: false,
  cacheTtlMs: 5_000,
  cacheCapacity: 200_000,
  personCacheBytes: 64 * 1024 * 1024,
};

/** What a batch resolved to: each event's person, the rows to write, and what to do once they are (not) written. */
export interface Resolution {
  readonly personIds: readonly string[];
  readonly persons: readonly PersonRow[];
  readonly distinctIds: readonly DistinctIdRow[];
  /** After the rows are written: remember what the batch learned. */
  commit(): void;
  /** After a failed write: forget everything the batch touched, so no later batch trusts it. */
  abandon(): void;
}

/**
 * Resolves distinct IDs to persons (SPEC §2.5). Batches must come one at a time (the group commit does that).
 *
 * A sole writer caches links and persons: what it wrote or read is what ClickHouse holds, since nothing else
 * writes there. With other writers, links are cached for a bounded time, but an event that changes identity or
 * person properties always reads its IDs and persons from ClickHouse, so another instance's links and persons
 * are never overwritten from a stale cache; persons are read for nothing else, so they are not cached.
 */
export class IdentityResolver {
  readonly #links: LinkCache;
  /** Sole writer only. */
  readonly #persons: PersonCache | undefined;
  readonly #clock = new VersionClock();

  constructor(
    private readonly db: ClickHouse,
    options: IdentityOptions = DEFAULT_IDENTITY_OPTIONS,
    private readonly observeCache: CacheObserver = () => {},
  ) {
    this.#links = linkCache(options.cacheCapacity, options.soleWriter ? 0 : options.cacheTtlMs);
    if (options.soleWriter) this.#persons = personCache(options.personCacheBytes);
  }

  async resolve(events: readonly CapturedEvent[]): Promise<Resolution> {
    const intents = events.map(personIntentOf);
    const batch = new IdentityBatch(this.#clock);
    try {
      await this.#load(batch, intents);
      const personIds = intents.map((intent) => batch.apply(intent));
      const mergedAway = batch.mergedAway();
      if (mergedAway.length > 0) batch.moveStragglers(await loadLinksOfPersons(this.db, mergedAway));
      return {
        personIds,
        persons: batch.changedPersons().map(personRow),
        distinctIds: batch.linksToWrite().map(([id, link]) => linkRow(id, link)),
        commit: () => this.#remember(batch),
        abandon: () => this.#forget(batch),
      };
    } catch (error) {
      this.#forget(batch);
      throw error;
    }
  }

  /**
   * Fills the batch with the links of every distinct ID its events name, then the persons its events change.
   * With other writers, the IDs of events that change persons, and their persons, are read fresh from
   * ClickHouse and the other links may come from the cache; a sole writer takes all of them from its caches.
   */
  async #load(batch: IdentityBatch, intents: readonly PersonIntent[]): Promise<void> {
    const changing = new Set<string>();
    const wanted = new Set<string>();
    for (const intent of intents) {
      const { distinctId } = intent.event;
      for (const id of intent.linkedId === undefined ? [distinctId] : [distinctId, intent.linkedId]) {
        wanted.add(id);
        if (changesPersons(intent)) changing.add(id);
      }
    }
    const sole = this.#persons !== undefined;
    const missing: string[] = [];
    for (const id of wanted) {
      const cached = sole || !changing.has(id) ? this.#links.get(id) : undefined;
      if (cached === undefined) missing.push(id);
      else batch.links.put(id, cached, "cached");
    }
    if (missing.length > 0) {
      for (const [id, link] of await loadLinks(this.db, missing)) batch.links.put(id, link, "loaded");
    }
    this.observeCache("links", wanted.size - missing.length, missing.length);

    // Persons are read only for the events that change them, and only when linked. An event that changes nothing
    // needs only its link; a new ID's person is created, not read: every write that creates a person also links
    // its distinct ID (persons go in before links), so a stored person whose ID has no link comes from a write
    // that failed and was never acknowledged. Writing it again at a higher version loses nothing acknowledged,
    // and spares new IDs a lookup that grows with the persons table.
    const persons = new Set<string>();
    for (const id of changing) {
      const personId = batch.links.get(id)?.personId;
      if (personId !== undefined) persons.add(personId);
    }
    if (persons.size === 0) return;
    const unread: string[] = [];
    for (const personId of persons) {
      const cached = this.#persons?.get(personId);
      if (cached === undefined) unread.push(personId);
      else batch.persons.put(personId, cached, "cached");
    }
    this.observeCache("persons", persons.size - unread.length, unread.length);
    if (unread.length === 0) return;
    for (const [id, person] of await loadPersons(this.db, unread)) batch.persons.put(id, person, "loaded");
  }

  /** Caches the links and persons the batch read from ClickHouse or wrote; what it took from a cache stays as is. */
  #remember(batch: IdentityBatch): void {
    for (const [id, link] of batch.links.entries(["loaded", "changed"])) this.#links.set(id, link);
    if (this.#persons === undefined) return;
    for (const [id, person] of batch.persons.entries(["loaded", "changed"])) this.#persons.set(id, person);
  }

  #forget(batch: IdentityBatch): void {
    for (const id of batch.links.keys()) this.#links.delete(id);
    for (const id of batch.persons.keys()) this.#persons?.delete(id);
  }
}
