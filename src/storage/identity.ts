import type { CapturedEvent } from "../capture/normalize";
import type { Timestamp } from "../capture/timestamp";
import type { Properties } from "../capture/validate";
import { LruCache } from "./cache";
import type { ClickHouse } from "./clickhouse";
import { changesPersons, type PersonIntent, personIntentOf, updatedProperties } from "./person-rules";
import type { DistinctIdRow, PersonRow } from "./schema";
import { VersionClock } from "./version-clock";

/** person_id = UUIDv5(distinct_id) in this namespace (PostHog's person namespace), for a distinct ID seen first. */
export const PERSON_ID_NAMESPACE = "932979b4-65c3-4424-8467-0b66ec27bc22";

export function personIdFor(distinctId: string): string {
  return Bun.randomUUIDv5(distinctId, PERSON_ID_NAMESPACE);
}

export interface Person {
  readonly id: string;
  readonly distinctId: string;
  readonly properties: Properties;
  readonly isIdentified: boolean;
  readonly isDeleted: boolean;
  readonly createdAt: Timestamp;
  readonly version: number;
}

/** Where a distinct ID points. */
export interface Link {
  readonly personId: string;
  readonly version: number;
}

export interface IdentityOptions {
  /** How long a cached link or person may be used for events that change nothing: the staleness bound. */
  readonly cacheTtlMs: number;
  readonly cacheCapacity: number;
}

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
 * Resolves distinct IDs to persons (SPEC §2.5) and keeps the person model: links, merges and person properties.
 * Batches must come one at a time (the group commit does that); within a batch, events apply in order.
 *
 * Reads are cached, but an event that changes identity or person properties always reads its IDs and persons
 * from ClickHouse, so a second instance's links are never overwritten from a stale cache.
 */
export class IdentityResolver {
  readonly #links: LruCache<string, Link>;
  readonly #persons: LruCache<string, Person>;
  readonly #clock = new VersionClock();

  constructor(
    private readonly db: ClickHouse,
    options: IdentityOptions = DEFAULT_IDENTITY_OPTIONS,
  ) {
    this.#links = new LruCache(options.cacheCapacity, options.cacheTtlMs);
    this.#persons = new LruCache(options.cacheCapacity, options.cacheTtlMs);
  }

  async resolve(events: readonly CapturedEvent[]): Promise<Resolution> {
    const batch = new IdentityBatch(this.db, this.#clock);
    const intents = events.map(personIntentOf);
    try {
      await batch.load(intents, this.#links, this.#persons);
      const personIds: string[] = [];
      for (const intent of intents) personIds.push(await batch.apply(intent));
      return {
        personIds,
        persons: batch.personRows(),
        distinctIds: batch.distinctIdRows(),
        commit: () => batch.remember(this.#links, this.#persons),
        abandon: () => batch.forget(this.#links, this.#persons),
      };
    } catch (error) {
      batch.forget(this.#links, this.#persons);
      throw error;
    }
  }
}

type Draft = { -readonly [K in keyof Person]: Person[K] };

/** One batch's view of the person graph: the cache and ClickHouse underneath, this batch's changes on top. */
class IdentityBatch {
  readonly #links = new Map<string, Link>();
  readonly #persons = new Map<string, Person>();
  /** Read from ClickHouse by this batch: safe to cache afterwards. */
  readonly #loadedLinks = new Set<string>();
  readonly #loadedPersons = new Set<string>();
  /** Changed by this batch: each gets one row with a new version. */
  readonly #changedLinks = new Set<string>();
  readonly #changedPersons = new Set<string>();
  /** Every event's distinct ID gets its link written or refreshed (SPEC §2.5 rule 4). */
  readonly #seen = new Set<string>();

  constructor(
    private readonly db: ClickHouse,
    private readonly clock: VersionClock,
  ) {}

  async load(
    intents: readonly PersonIntent[],
    cachedLinks: LruCache<string, Link>,
    cachedPersons: LruCache<string, Person>,
  ) {
    const wanted = new Set<string>();
    const fresh = new Set<string>();
    for (const intent of intents) {
      const changes = changesPersons(intent);
      const { distinctId } = intent.event;
      for (const id of intent.linkedId === undefined ? [distinctId] : [distinctId, intent.linkedId]) {
        wanted.add(id);
        if (changes) fresh.add(id);
      }
    }

    const linksToLoad: string[] = [];
    for (const id of wanted) {
      const cached = fresh.has(id) ? undefined : cachedLinks.get(id);
      if (cached === undefined) linksToLoad.push(id);
      else this.#links.set(id, cached);
    }
    for (const [id, link] of await loadLinks(this.db, linksToLoad)) {
      this.#links.set(id, link);
      this.#loadedLinks.add(id);
    }

    // The persons the wanted IDs point to, or would get if new (a row may exist from an earlier partial write).
    const freshPersons = new Set<string>();
    const personsWanted = new Set<string>();
    for (const id of wanted) {
      const personId = this.#links.get(id)?.personId ?? personIdFor(id);
      personsWanted.add(personId);
      if (fresh.has(id)) freshPersons.add(personId);
    }
    const personsToLoad: string[] = [];
    for (const personId of personsWanted) {
      const cached = freshPersons.has(personId) ? undefined : cachedPersons.get(personId);
      if (cached === undefined) personsToLoad.push(personId);
      else this.#persons.set(personId, cached);
    }
    for (const person of await loadPersons(this.db, personsToLoad)) {
      this.#persons.set(person.id, person);
      this.#loadedPersons.add(person.id);
    }
  }

  /** Applies one event and returns the person it belongs to. */
  async apply({ event, linkedId, updates, identifies }: PersonIntent): Promise<string> {
    if (linkedId !== undefined) await this.#link(event.distinctId, linkedId, event);
    const person = this.#personOf(event.distinctId, event);
    this.#seen.add(event.distinctId);

    const properties = updates === undefined ? undefined : updatedProperties(person.properties, updates);
    const becomesIdentified = identifies && !person.isIdentified;
    if (properties !== undefined || becomesIdentified) {
      const draft = this.#edit(person.id);
      if (properties !== undefined) draft.properties = properties;
      if (becomesIdentified) {
        draft.isIdentified = true;
        draft.distinctId = event.distinctId;
      }
    }
    return person.id;
  }

  /** `$identify` / `$create_alias`: puts `other` on the same person as `target`, merging if need be. */
  async #link(target: string, other: string, event: CapturedEvent): Promise<void> {
    const targetPerson = this.#links.get(target)?.personId;
    const otherPerson = this.#links.get(other)?.personId;
    if (targetPerson === undefined && otherPerson === undefined) {
      this.#setLink(other, this.#personOf(target, event).id);
    } else if (otherPerson === undefined) {
      this.#setLink(other, targetPerson!);
    } else if (targetPerson === undefined) {
      this.#setLink(target, otherPerson);
    } else if (targetPerson !== otherPerson) {
      await this.#merge(otherPerson, this.#personOf(target, event).id);
    }
  }

  /**
   * Moves every distinct ID of `fromId` to `intoId` and folds the properties in (the survivor's values win),
   * then marks `fromId` deleted.
   */
  async #merge(fromId: string, intoId: string): Promise<void> {
    for (const id of await this.#distinctIdsOf(fromId)) this.#setLink(id, intoId);
    const from = this.#persons.get(fromId);
    if (from === undefined) return;
    const into = this.#edit(intoId);
    into.properties = { ...from.properties, ...into.properties };
    if (from.createdAt < into.createdAt) into.createdAt = from.createdAt;
    if (from.isIdentified && !into.isIdentified) {
      into.isIdentified = true;
      into.distinctId = from.distinctId;
    }
    this.#edit(fromId).isDeleted = true;
  }

  /** The distinct IDs on a person now: ClickHouse's, except where this batch has moved them already. */
  async #distinctIdsOf(personId: string): Promise<string[]> {
    for (const [id, link] of await loadLinksOfPerson(this.db, personId)) {
      if (this.#changedLinks.has(id)) continue;
      this.#links.set(id, link);
      this.#loadedLinks.add(id);
    }
    return [...this.#links].filter(([, link]) => link.personId === personId).map(([id]) => id);
  }

  /** The person a distinct ID belongs to; a new ID gets a new person, with its deterministic id. */
  #personOf(distinctId: string, event: CapturedEvent): Person {
    const personId = this.#links.get(distinctId)?.personId ?? personIdFor(distinctId);
    let person = this.#persons.get(personId);
    if (person === undefined) {
      person = {
        id: personId,
        distinctId,
        properties: {},
        isIdentified: false,
        isDeleted: false,
        createdAt: event.timestamp,
        version: this.clock.next(),
      };
      this.#persons.set(personId, person);
      this.#changedPersons.add(personId);
    }
    this.#setLink(distinctId, personId);
    return person;
  }

  #setLink(distinctId: string, personId: string): void {
    const current = this.#links.get(distinctId);
    if (current?.personId === personId) return;
    this.#links.set(distinctId, { personId, version: this.clock.next(current?.version) });
    this.#changedLinks.add(distinctId);
  }

  /** A writable copy of a person, with its next version; the first edit in a batch makes the copy. */
  #edit(personId: string): Draft {
    const person = this.#persons.get(personId)!;
    if (this.#changedPersons.has(personId)) return person as Draft;
    const draft: Draft = { ...person, properties: { ...person.properties }, version: this.clock.next(person.version) };
    this.#persons.set(personId, draft);
    this.#changedPersons.add(personId);
    return draft;
  }

  personRows(): PersonRow[] {
    return [...this.#changedPersons].map((id) => {
      const person = this.#persons.get(id)!;
      return {
        id: person.id,
        distinct_id: person.distinctId,
        properties: JSON.stringify(person.properties),
        is_identified: person.isIdentified ? 1 : 0,
        is_deleted: person.isDeleted ? 1 : 0,
        created_at: person.createdAt,
        version: person.version,
      };
    });
  }

  /** Changed links with their new versions, and unchanged ones refreshed at the version they have. */
  distinctIdRows(): DistinctIdRow[] {
    return [...new Set([...this.#changedLinks, ...this.#seen])].map((id) => {
      const link = this.#links.get(id)!;
      return { distinct_id: id, person_id: link.personId, is_deleted: 0, version: link.version };
    });
  }

  /** Caches what this batch read or wrote; entries that came from the cache keep their original expiry. */
  remember(links: LruCache<string, Link>, persons: LruCache<string, Person>): void {
    for (const id of new Set([...this.#loadedLinks, ...this.#changedLinks])) links.set(id, this.#links.get(id)!);
    for (const id of new Set([...this.#loadedPersons, ...this.#changedPersons]))
      persons.set(id, this.#persons.get(id)!);
  }

  forget(links: LruCache<string, Link>, persons: LruCache<string, Person>): void {
    for (const id of this.#links.keys()) links.delete(id);
    for (const id of this.#persons.keys()) persons.delete(id);
  }
}

// ClickHouse lets an alias shadow a column of the same name, in WHERE and inside aggregates too, so no alias
// below reuses a column name.

interface LinkRecord {
  distinct_id: string;
  person: string;
  latest_version: string | number;
}

async function loadLinks(db: ClickHouse, distinctIds: readonly string[]): Promise<Map<string, Link>> {
  const rows = await db.rowsIn<LinkRecord>(
    `SELECT distinct_id, toString(argMax(person_id, version)) AS person, max(version) AS latest_version
     FROM ${db.table("person_distinct_ids")}
     WHERE distinct_id IN {ids:Array(String)}
     GROUP BY distinct_id
     HAVING argMax(is_deleted, version) = 0`,
    "ids",
    distinctIds,
  );
  return toLinks(rows);
}

/** Current links to a person. The bloom filter index narrows the inner scan to the person's granules. */
async function loadLinksOfPerson(db: ClickHouse, personId: string): Promise<Map<string, Link>> {
  const table = db.table("person_distinct_ids");
  const rows = await db.rows<LinkRecord>(
    `SELECT distinct_id, toString(argMax(person_id, version)) AS person, max(version) AS latest_version
     FROM ${table}
     WHERE distinct_id IN (SELECT distinct_id FROM ${table} WHERE person_id = {person:UUID})
     GROUP BY distinct_id
     HAVING person = {person:String} AND argMax(is_deleted, version) = 0`,
    { person: personId },
  );
  return toLinks(rows);
}

function toLinks(rows: readonly LinkRecord[]): Map<string, Link> {
  return new Map(rows.map((row) => [row.distinct_id, { personId: row.person, version: Number(row.latest_version) }]));
}

interface PersonRecord {
  person: string;
  primary_id: string;
  props: string;
  identified: number;
  deleted: number;
  created: Timestamp;
  latest_version: string | number;
}

async function loadPersons(db: ClickHouse, personIds: readonly string[]): Promise<Person[]> {
  const rows = await db.rowsIn<PersonRecord>(
    `SELECT toString(id) AS person,
       argMax(distinct_id, version) AS primary_id,
       argMax(properties, version) AS props,
       argMax(is_identified, version) AS identified,
       argMax(is_deleted, version) AS deleted,
       toString(argMax(created_at, version)) AS created,
       max(version) AS latest_version
     FROM ${db.table("persons")}
     WHERE id IN {ids:Array(UUID)}
     GROUP BY id`,
    "ids",
    personIds,
  );
  return rows.map((row) => ({
    id: row.person,
    distinctId: row.primary_id,
    properties: JSON.parse(row.props) as Properties,
    isIdentified: Number(row.identified) === 1,
    isDeleted: Number(row.deleted) === 1,
    createdAt: row.created,
    version: Number(row.latest_version),
  }));
}
