import { LRUCache } from "lru-cache";
import type { Timestamp } from "../contract";
import { loadPersons, type PersonRow } from "../identity";
import type { ClickHouse } from "../storage";

/** What an event carries of its person (`PERSONS_ON_EVENTS`): the person as its flush left it. */
export interface PersonOnEvent {
  /** The person's properties, the JSON object `persons.properties` holds. */
  readonly properties: string;
  readonly createdAt: Timestamp;
}

/** What an event with no person carries: the columns' defaults. */
export const NO_PERSON: PersonOnEvent = { properties: "", createdAt: "1970-01-01 00:00:00.000000" as Timestamp };

export interface PersonsOnEventsOptions {
  /** Milliseconds a person read from the table is used before it is read again (0: until evicted). */
  readonly ttlMs: number;
  /** About how many bytes of properties the cache holds. */
  readonly maxBytes: number;
}

/**
 * Finds each flush's persons for their events: those the flush itself derived, else the last seen of each (the
 * flushes' derivations and reads keep it), else read from `persons`. Most persons an event names changed nothing
 * in its flush, so most are served from the cache. A sole writer's cache is exact: every person it stores is one
 * of its flushes derived (a repair writes what the facts derive, the same row). With other writers a person read
 * is used for `ttlMs`, the bound on how stale an event's copy of another instance's change may be, as for links.
 */
export class PersonsOnEvents {
  readonly #cache: LRUCache<string, PersonOnEvent>;

  constructor(
    private readonly db: ClickHouse,
    options: PersonsOnEventsOptions,
  ) {
    this.#cache = new LRUCache<string, PersonOnEvent>({
      maxSize: options.maxBytes,
      sizeCalculation: (person, id) => person.properties.length + id.length + 64,
      ttl: options.ttlMs,
      updateAgeOnGet: false,
    });
  }

  /** After `ingest forget`: these persons' properties must never be copied onto an event again. */
  forget(personIds: Iterable<string>): void {
    for (const id of personIds) this.#cache.delete(id);
  }

  /**
   * The persons of `personIds` as of this flush. A personless event's person has no row: it gets `NO_PERSON`, and
   * is kept so (it gets a row, and the cache the row, in the flush that derives it).
   */
  async of(personIds: readonly string[], derived: readonly PersonRow[]): Promise<ReadonlyMap<string, PersonOnEvent>> {
    for (const row of derived) this.#cache.set(row.id, { properties: row.properties, createdAt: row.created_at });
    const found = new Map<string, PersonOnEvent>();
    const missing = new Set<string>();
    for (const id of personIds) {
      const person = this.#cache.get(id);
      if (person) found.set(id, person);
      else missing.add(id);
    }
    if (missing.size === 0) return found;
    const stored = await loadPersons(this.db, [...missing]);
    for (const id of missing) {
      const person = stored.get(id);
      const onEvent = person ? { properties: person.properties, createdAt: person.createdAt } : NO_PERSON;
      this.#cache.set(id, onEvent);
      found.set(id, onEvent);
    }
    return found;
  }
}
