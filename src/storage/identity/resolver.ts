import type { CapturedEvent } from "../../event";
import type { ClickHouse } from "../clickhouse";
import type { DistinctIdRow, PersonRow } from "../schema";
import { IdentityBatch } from "./batch";
import { TtlCache } from "./cache";
import type { Overlay } from "./overlay";
import { type Link, type Person, personIdFor } from "./person";
import { changesPersons, type PersonIntent, personIntentOf } from "./person-rules";
import { linkRow, loadLinks, loadLinksOfPersons, loadPersons, personRow } from "./person-store";
import { VersionClock } from "./version-clock";

export interface IdentityOptions {
  /** How long a cached link or person may be used for events that change nothing: the staleness bound. */
  readonly cacheTtlMs: number;
  readonly cacheCapacity: number;
}

/** Told how each batch's reads went: how many came from the cache and how many had to be read. */
export type CacheObserver = (kind: "links" | "persons", hits: number, misses: number) => void;

export const DEFAULT_IDENTITY_OPTIONS: IdentityOptions = { cacheTtlMs: 5_000, cacheCapacity: 200_000 };

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
 * Reads are cached, but an event that changes identity or person properties always reads its IDs and persons
 * from ClickHouse, so a second instance's links are never overwritten from a stale cache.
 */
export class IdentityResolver {
  readonly #links: TtlCache<string, Link>;
  readonly #persons: TtlCache<string, Person>;
  readonly #clock = new VersionClock();

  constructor(
    private readonly db: ClickHouse,
    options: IdentityOptions = DEFAULT_IDENTITY_OPTIONS,
    private readonly observeCache: CacheObserver = () => {},
  ) {
    this.#links = new TtlCache(options.cacheCapacity, options.cacheTtlMs);
    this.#persons = new TtlCache(options.cacheCapacity, options.cacheTtlMs);
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
   * Fills the batch with the links of every distinct ID its events name, then the persons it may change or
   * create. IDs of events that change persons, and their persons, are read fresh; the rest may come from the
   * cache.
   */
  async #load(batch: IdentityBatch, intents: readonly PersonIntent[]): Promise<void> {
    const fresh = new Set<string>();
    const wanted = new Set<string>();
    for (const intent of intents) {
      const { distinctId } = intent.event;
      for (const id of intent.linkedId === undefined ? [distinctId] : [distinctId, intent.linkedId]) {
        wanted.add(id);
        if (changesPersons(intent)) fresh.add(id);
      }
    }
    const links = await readThrough(batch.links, wanted, fresh, this.#links, (ids) => loadLinks(this.db, ids));
    this.observeCache("links", links.hits, links.misses);

    // Persons are read for the events that change them (fresh), and for new IDs (whose deterministic person
    // may exist from an earlier partial write). An event that changes nothing only needs its link.
    const persons = new Set<string>();
    const freshPersons = new Set<string>();
    for (const id of wanted) {
      const personId = batch.links.get(id)?.personId;
      if (personId === undefined) persons.add(personIdFor(id));
      if (fresh.has(id)) {
        persons.add(personId ?? personIdFor(id));
        freshPersons.add(personId ?? personIdFor(id));
      }
    }
    const loaded = await readThrough(batch.persons, persons, freshPersons, this.#persons, (ids) =>
      loadPersons(this.db, ids),
    );
    this.observeCache("persons", loaded.hits, loaded.misses);
  }

  /** Caches what the batch read from ClickHouse or wrote; entries it took from the cache keep their expiry. */
  #remember(batch: IdentityBatch): void {
    for (const [id, link] of batch.links.entries(["loaded", "changed"])) this.#links.set(id, link);
    for (const [id, person] of batch.persons.entries(["loaded", "changed"])) this.#persons.set(id, person);
  }

  #forget(batch: IdentityBatch): void {
    for (const id of batch.links.keys()) this.#links.delete(id);
    for (const id of batch.persons.keys()) this.#persons.delete(id);
  }
}

/**
 * Each key from the cache unless it must be read fresh; the rest from ClickHouse, in one query. Returns how many
 * came from the cache and how many were read.
 */
async function readThrough<V>(
  into: Overlay<V>,
  keys: Iterable<string>,
  fresh: ReadonlySet<string>,
  cache: TtlCache<string, V>,
  load: (keys: readonly string[]) => Promise<ReadonlyMap<string, V>>,
): Promise<{ hits: number; misses: number }> {
  const missing: string[] = [];
  let hits = 0;
  for (const key of keys) {
    const cached = fresh.has(key) ? undefined : cache.get(key);
    if (cached === undefined) missing.push(key);
    else {
      into.put(key, cached, "cached");
      hits++;
    }
  }
  if (missing.length > 0) for (const [key, value] of await load(missing)) into.put(key, value, "loaded");
  return { hits, misses: missing.length };
}
