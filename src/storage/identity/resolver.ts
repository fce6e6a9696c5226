import type { LRUCache } from "lru-cache";
import type { CapturedEvent } from "../../event";
import type { ClickHouse } from "../clickhouse";
import { type DistinctIdRow, linkRow, type PersonRow, personRow } from "../rows";
import { IdentityBatch } from "./batch";
import { type LinkCache, linkCache, type PersonCache, personBytes, personCache } from "./cache";
import type { Overlay } from "./overlay";
import { changesPersons, type PersonIntent, personIntentOf } from "./person-rules";
import { allLinks, allPersons, loadLinks, loadLinksOfPersons, loadPersons } from "./person-store";
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

/** Told how each batch's lookups went: how many the cache answered and how many had to be read. */
export type CacheObserver = (kind: "links" | "persons", hits: number, misses: number) => void;

/** What `preload` did: how many links and persons it read, in how long, and whether the links were all of them. */
export interface Preloaded {
  readonly links: number;
  readonly persons: number;
  readonly seconds: number;
  readonly complete: boolean;
}

/** Rows read per query by `preload`: about 50 ms of the engine's time each. */
const PRELOAD_PAGE = 10_000;

/**
 * Most IDs a complete link cache may be unsure of (after failed writes) before it stops counting itself
 * complete, so an outage with new visitors arriving cannot grow the set without bound.
 */
const MAX_UNSURE = 10_000;

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
 * Resolves distinct IDs to persons (docs/identity.md#rules). Batches must come one at a time (the group commit does that).
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
  /**
   * Sole writer, once `preload` found every link fits: the cache holds every link ClickHouse has, except
   * perhaps those of `#unsure` IDs, so an ID it does not hold is new and needs no read. An eviction ends it.
   */
  #complete = false;
  /** IDs a failed write touched: ClickHouse may hold links of theirs that the cache does not. */
  readonly #unsure = new Set<string>();

  constructor(
    private readonly db: ClickHouse,
    private readonly options: IdentityOptions,
    private readonly observeCache: CacheObserver = () => {},
  ) {
    this.#links = linkCache(options.cacheCapacity, options.soleWriter ? 0 : options.cacheTtlMs, {
      onEvict: () => this.#incomplete(),
    });
    if (options.soleWriter) this.#persons = personCache(options.personCacheBytes);
  }

  /**
   * Sole writer: reads every link ClickHouse has into the cache, if they fit in it, so that from then on only
   * IDs the cache does not hold are new ones, and those need no read; then as many persons as the person cache
   * has room for. Call once, before the first batch. Links that do not all fit are partly read and left to the
   * cache as any others; later batches read what it lacks.
   */
  async preload(): Promise<Preloaded> {
    const started = performance.now();
    let links = 0;
    let persons = 0;
    if (this.#persons !== undefined) {
      this.#complete = true;
      try {
        links = await this.#preloadLinks();
        persons = await this.#preloadPersons(this.#persons);
      } catch (error) {
        this.#incomplete();
        throw error;
      }
    }
    return { links, persons, seconds: (performance.now() - started) / 1000, complete: this.#complete };
  }

  async #preloadLinks(): Promise<number> {
    let count = 0;
    for await (const page of allLinks(this.db, PRELOAD_PAGE)) {
      for (const [id, link] of page) this.#links.set(id, link);
      count += page.size;
      if (count > this.options.cacheCapacity) break; // evicted already: not complete
    }
    return count;
  }

  /** Persons until the cache is full: evicting one for another would only cost time. */
  async #preloadPersons(cache: PersonCache): Promise<number> {
    let count = 0;
    for await (const page of allPersons(this.db, PRELOAD_PAGE)) {
      for (const [id, person] of page) {
        const size = personBytes(person);
        if (cache.calculatedSize + size > cache.maxSize) return count;
        cache.set(id, person, { size });
        count++;
      }
    }
    return count;
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
    const { soleWriter } = this.options;
    // A complete cache evicts nothing (its first eviction ends it), so reading it need not update recency: a
    // peek costs about half a get when the cache holds a million links.
    const missing = takeCached(
      batch.links,
      wanted,
      (id) => (soleWriter || !changing.has(id) ? this.#links : undefined),
      !this.#complete,
    );
    // A complete cache knows that an ID it does not hold is new, unless a failed write touched it.
    const unread = this.#complete ? missing.filter((id) => this.#unsure.has(id)) : missing;
    if (unread.length > 0) {
      for (const [id, link] of await loadLinks(this.db, unread)) batch.links.put(id, link, "loaded");
    }
    this.observeCache("links", wanted.size - unread.length, unread.length);

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
    const toRead = takeCached(batch.persons, persons, () => this.#persons);
    this.observeCache("persons", persons.size - toRead.length, toRead.length);
    if (toRead.length === 0) return;
    for (const [id, person] of await loadPersons(this.db, toRead)) batch.persons.put(id, person, "loaded");
  }

  /** Caches the links and persons the batch read from ClickHouse or wrote; what it took from a cache stays as is. */
  #remember(batch: IdentityBatch): void {
    for (const [id, link] of batch.links.entries(["loaded", "changed"])) this.#links.set(id, link);
    // every ID the batch looked up now has its link in the cache (identity rule 4)
    if (this.#unsure.size > 0) for (const id of batch.links.keys()) this.#unsure.delete(id);
    if (this.#persons === undefined) return;
    for (const [id, person] of batch.persons.entries(["loaded", "changed"])) this.#persons.set(id, person);
  }

  #forget(batch: IdentityBatch): void {
    for (const id of batch.links.keys()) {
      this.#links.delete(id);
      if (this.#complete) this.#unsure.add(id);
    }
    for (const id of batch.persons.keys()) this.#persons?.delete(id);
    if (this.#unsure.size > MAX_UNSURE) this.#incomplete();
  }

  #incomplete(): void {
    this.#complete = false;
    this.#unsure.clear();
  }
}

/**
 * Puts into the batch's `overlay` each key that its cache (from `cacheFor`; none: must be read) holds, and
 * returns the keys it does not. `recency`: whether the lookups count as uses for the cache's eviction order.
 */
function takeCached<V extends {}>(
  overlay: Overlay<V>,
  keys: Iterable<string>,
  cacheFor: (key: string) => LRUCache<string, V> | undefined,
  recency = true,
): string[] {
  const missing: string[] = [];
  for (const key of keys) {
    const cache = cacheFor(key);
    const cached = recency ? cache?.get(key) : cache?.peek(key);
    if (cached === undefined) missing.push(key);
    else overlay.put(key, cached, "cached");
  }
  return missing;
}
