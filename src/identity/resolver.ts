import type { CapturedEvent } from "../contract";
import type { ClickHouse } from "../storage";
import type { CacheObserver, Preloaded } from "../telemetry";
import { ArrivalClock } from "./arrival-clock";
import {
  cachePerson,
  cacheRead,
  groupByCachedPerson,
  type LinkCache,
  linkCache,
  type PersonCache,
  personCache,
} from "./cache";
import { Component } from "./component";
import { components } from "./components";
import { componentRows } from "./derive";
import { type FactRow, stamped } from "./facts";
import { factsOf } from "./flush-facts";
import { fillOnceGaps, gatherFacts } from "./gather";
import { legacyFacts } from "./legacy";
import { isPersonless, type Link, PERSONLESS, personIdFor } from "./person";
import { namedIds, type PersonIntent, personIntentOf } from "./person-rules";
import {
  allLinks,
  loadLinks,
  loadNeighbourhood,
  loadOnces,
  overrideVersions,
  personVersions,
  writtenAfter,
} from "./person-store";
import type { IdentityOptions, Prepared, Repair, Resolution } from "./resolution";
import { type DistinctIdRow, linkRow, type OverrideRow, type PersonRow } from "./rows";

/** The tables a derivation reads: written by every instance, on replicas that must have caught up first. */
const IDENTITY_TABLES = ["identity_facts", "person_distinct_ids", "persons", "person_overrides"] as const;

/** Rows read per query by `preload`: pages short enough that a flush never waits long behind one. */
const PRELOAD_PAGE = 10_000;

/**
 * Most IDs a complete link cache may be unsure of (after failed writes) before it stops counting itself
 * complete, so an outage with new visitors arriving cannot grow the set without bound.
 */
const MAX_UNSURE = 10_000;

/**
 * Resolves distinct IDs to persons (docs/identity.md). Facts go in first (`prepare`, then the caller writes
 * them); then `resolve` reads every fact of the persons they touch and derives those persons and links from the
 * facts alone, so whichever instance derives them last, with all facts in view, writes rows no other instance's
 * can outrank (docs/scale-out.md). Flushes are resolved one at a time (the group commit does that).
 */
export class IdentityResolver {
  readonly #links: LinkCache;
  /** Sole writer only. */
  readonly #persons: PersonCache | undefined;
  readonly #arrivals = new ArrivalClock();
  /**
   * Sole writer, once `preload` found every link fits: the cache holds every link ClickHouse has, except
   * perhaps those of `#unsure` IDs, so an ID it does not hold is new and needs no read. An eviction ends it.
   */
  #complete = false;
  /** IDs a failed write touched: ClickHouse may hold links or facts of theirs that the cache does not know. */
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
   * IDs the cache does not hold are new ones, and those need no read. Call once, before the first flush. Links
   * that do not all fit are partly read and left to the cache as any others; later flushes read what it lacks.
   */
  async preload(): Promise<Preloaded> {
    const started = performance.now();
    let links = 0;
    if (this.options.soleWriter) {
      this.#complete = true;
      try {
        for await (const page of allLinks(this.db, PRELOAD_PAGE)) {
          for (const [id, link] of page) this.#links.set(id, link);
          links += page.size;
          if (links > this.options.cacheCapacity) break; // evicted already: not complete
        }
      } catch (error) {
        this.#incomplete();
        throw error;
      }
    }
    return { links, seconds: (performance.now() - started) / 1000, complete: this.#complete };
  }

  /** The facts of a flush's events: needs the links of the IDs they name, from the cache or ClickHouse. */
  async prepare(events: readonly CapturedEvent[]): Promise<Prepared> {
    const intents = events.map((event) => personIntentOf(event, this.options));
    const wanted = namedIds(intents);
    // A cached link is safe to take whoever else writes: a link only ever moves, it is never removed (but by
    // `ingest forget`, which empties the cache of its own instance; another's serves it up to its TTL), so an ID
    // the cache holds has one. Which person it points at is settled by `resolve` for every ID whose event
    // changes anything; the others take it as the person of their event, up to the cache's TTL old.
    const known = new Map<string, Link>();
    const missing: string[] = [];
    for (const id of wanted) {
      // A complete cache evicts nothing (its first eviction ends it), so its reads need not update recency.
      const link = this.#complete ? this.#links.peek(id) : this.#links.get(id);
      if (link === undefined) missing.push(id);
      else known.set(id, link);
    }
    // A complete cache knows that an ID it does not hold is new, unless a failed write touched it.
    const unread = this.#complete ? missing.filter((id) => this.#unsure.has(id)) : missing;
    if (unread.length > 0) for (const [id, link] of await loadLinks(this.db, unread)) known.set(id, link);
    this.observeCache("links", wanted.size - unread.length, unread.length);
    // a personless link read back (not cached) may be one a failed write left beside facts of the ID
    const readBack = new Set(unread);
    const noFacts = (id: string) =>
      this.#isCertainlyNew(id, known) || (!readBack.has(id) && this.#hasNoFacts(known.get(id)));
    const read = await this.#holdPersons(intents, known, noFacts);
    // What the flush holds for certain of a person: a sole writer holds all (cached, read just now, or none for an
    // ID that has no facts); beside other writers, nothing.
    const held = (id: string) => read.get(id) ?? this.#persons?.peek(id);
    const arrival = () => this.#arrivals.next();
    return { facts: factsOf(intents, (id) => known.get(id), arrival, held), intents, known, read };
  }

  /**
   * Sole writer: reads the persons of the IDs the events name that it neither caches nor knows to have no facts,
   * so that it holds every person its facts go to (`factsOf` writes only what changes one), and adds their stored
   * links to `known`. The flush would read them after writing its facts anyway; `resolve` derives them from this
   * read and the flush's facts; `commit` caches those it wrote nothing to. An ID known to have no facts
   * (`noFacts`) is in the result as `"none"`.
   */
  async #holdPersons(
    intents: readonly PersonIntent[],
    known: Map<string, Link>,
    noFacts: (id: string) => boolean,
  ): Promise<Map<string, Component | "none">> {
    const held = new Map<string, Component | "none">();
    const persons = this.#persons;
    if (persons === undefined) return held;
    const unheld = new Set<string>();
    for (const id of namedIds(intents, { profiles: true })) {
      if (persons.has(id)) continue;
      if (noFacts(id)) held.set(id, "none");
      else unheld.add(id);
    }
    if (unheld.size === 0) return held;
    const current = new Map(known);
    for (const id of unheld) held.set(id, new Component()); // read, and found to have no facts
    for (const person of await this.#readComponents(unheld, current, [])) {
      for (const id of person.members) held.set(id, person);
    }
    for (const [id, link] of current) known.set(id, link);
    return held;
  }

  /**
   * Once the prepared facts are written: every person they touch, derived from all its facts, and the links
   * that differ from what is stored. A sole writer derives a person with no read when the cache holds its facts
   * (or its IDs are all new to a complete link cache): the flush's facts are then the only ones it lacks.
   */
  async resolve({ facts, intents, known, read }: Prepared): Promise<Resolution> {
    const current = new Map(known);
    const derived: Component[] = [];
    /** Persons derived from cached facts (not read by this flush): their links are stored as the cached person had them. */
    const linkedBefore = new Map<Component, Component>();
    let readBefore = 0;
    const toRead = new Set<string>();
    const groups = groupByCachedPerson(components(facts), read, this.#persons);
    for (const { parts, cached, complete, read: wasRead } of groups) {
      if (!complete) {
        for (const part of parts) for (const id of part.members) toRead.add(id);
        continue;
      }
      const whole = new Component();
      for (const person of [...cached, ...parts]) whole.absorb(person);
      if (whole.onceGaps().length > 0) {
        // an `$unset` followed by `$set_once`s it has not read: read as another writer would
        for (const id of whole.members) toRead.add(id);
        continue;
      }
      derived.push(whole);
      if (wasRead) readBefore++;
      else if (cached.size === 1) linkedBefore.set(whole, [...cached][0]!);
    }
    const fromCache = derived.length - readBefore;
    if (toRead.size > 0)
      for (const component of await this.#readComponents(toRead, current, facts)) derived.push(component);
    if (derived.length > 0) this.observeCache("persons", fromCache, derived.length - fromCache);

    const personOf = new Map<string, string>();
    const persons: PersonRow[] = [];
    const overrides: OverrideRow[] = [];
    const distinctIds: DistinctIdRow[] = [];
    const links = new Map<string, Link>();
    for (const component of derived) {
      const before = linkedBefore.get(component);
      // A cached person whose identity facts the flush left as they were: its links and its merged-away persons
      // are stored as they were derived, and only a sole writer has such a cache, so nothing can outrank them.
      const unchanged =
        before !== undefined && before.personId === component.personId && before.linkVersion === component.linkVersion;
      const same: Link | undefined = unchanged
        ? { personId: before.personId!, version: before.linkVersion }
        : undefined;
      const rows = componentRows(component, (id) => same ?? current.get(id));
      if (rows === undefined) continue;
      for (const person of rows.persons) persons.push(person);
      for (const override of rows.overrides) overrides.push(override);
      for (const link of rows.links) distinctIds.push(link);
      for (const id of component.members) {
        personOf.set(id, rows.person.id);
        links.set(id, rows.link);
      }
    }
    for (const { event, personless } of intents) {
      const id = event.distinctId;
      if (!personless || personOf.has(id) || current.has(id)) continue;
      // a new ID whose events are all personless: linked to the person its first profile will make, which none has
      const link: Link = { personId: personIdFor(id), version: PERSONLESS };
      current.set(id, link);
      links.set(id, link);
      distinctIds.push(linkRow(id, link));
    }
    const personIds = intents.map(
      ({ event }) => personOf.get(event.distinctId) ?? current.get(event.distinctId)!.personId,
    );
    return { personIds, persons, overrides, distinctIds, links, derived };
  }

  /**
   * The rows that bring the persons and links of the components of `ids` up to all their facts, derived as a
   * flush derives them: only those whose stored row is missing, elsewhere or of a lower version
   * (docs/scale-out.md#repair). Writes nothing itself; `repaired` takes what was written.
   */
  async repair(ids: readonly string[], settledBy: number): Promise<Repair> {
    const current = new Map<string, Link>();
    const read = await this.#readComponents(new Set(ids), current, []);
    // a component with facts written since `settledBy` may be a flush's that is still writing: the next sweep has it
    const recent = await writtenAfter(
      this.db,
      read.flatMap((component) => [...component.members]),
      settledBy,
    );
    const derived = read.filter((component) => ![...component.members].some((id) => recent.has(id)));
    const rows = derived.flatMap((component) => componentRows(component, (id) => current.get(id)) ?? []);
    const candidates = rows.flatMap((row) => row.persons);
    const overridden = rows.flatMap((row) => row.overrides);
    const distinctIds = rows.flatMap((row) => row.links);
    const [storedPersons, storedOverrides] = await Promise.all([
      personVersions(
        this.db,
        candidates.map((row) => row.id),
      ),
      overrideVersions(
        this.db,
        overridden.map((row) => row.old_person_id),
      ),
    ]);
    const persons = candidates.filter((row) => (storedPersons.get(row.id) ?? -1) < row.version);
    const overrides = overridden.filter((row) => (storedOverrides.get(row.old_person_id) ?? -1) < row.version);
    return { persons, overrides, distinctIds };
  }

  /**
   * After a repair's rows are written: its links replace older cached ones, and its persons leave the person
   * cache (their folds lacked the facts the repair found).
   */
  repaired({ distinctIds }: Repair): void {
    for (const row of distinctIds) {
      const cached = this.#links.peek(row.distinct_id);
      if (cached === undefined || cached.version < row.version) {
        this.#links.set(row.distinct_id, { personId: row.person_id, version: row.version });
      }
      for (const member of this.#persons?.get(row.distinct_id)?.members ?? []) this.#persons?.delete(member);
      this.#unsure.delete(row.distinct_id);
    }
  }

  /** After the flush's identity rows are written (its events may still be going in): caches what it learned. */
  commit(prepared: Prepared, resolution: Resolution): void {
    // links the cache served are in it already (a read updated their recency): set only those read
    for (const [id, link] of prepared.known) {
      if (!resolution.links.has(id) && this.#links.peek(id) !== link) this.#links.set(id, link);
    }
    for (const [id, link] of resolution.links) this.#links.set(id, link);
    // every ID the flush named now has its link in the cache (identity rule 4)
    if (this.#unsure.size > 0) for (const id of resolution.links.keys()) this.#unsure.delete(id);
    const persons = this.#persons;
    if (persons === undefined) return;
    for (const component of resolution.derived) cachePerson(persons, component);
    // persons read that the flush wrote nothing to: as stored, so cached too (their next page view reads nothing)
    let untouched = 0;
    for (const person of new Set(prepared.read.values())) {
      const found = person !== "none" && person.members.size > 0; // not an ID read and found to have no facts
      if (!found || [...person.members].some((id) => resolution.links.has(id))) continue;
      if (cacheRead(persons, person, (id) => prepared.known.get(id))) untouched++;
    }
    if (untouched > 0) this.observeCache("persons", 0, untouched);
  }

  /** After a failed write: forgets every ID the flush named, so no later flush trusts what it cached of them. */
  abandon(prepared: Prepared): void {
    const named = new Set(prepared.known.keys());
    for (const fact of prepared.facts) named.add(fact.distinct_id);
    for (const id of named) {
      // ClickHouse may hold facts of this person that its cached fold lacks: none of its IDs may serve it
      const person = this.#persons?.get(id);
      for (const member of person?.members ?? []) this.#persons?.delete(member);
      this.#links.delete(id);
      if (this.#complete) this.#unsure.add(id);
    }
    if (this.#unsure.size > MAX_UNSURE) this.#incomplete();
  }

  /**
   * After `ingest forget` erased these IDs and everything of their persons: nothing cached of them may serve again,
   * so their next event makes a new person from its own facts alone (a complete cache now rightly takes them for
   * new). Other instances' caches hold their links up to `cacheTtlMs` (docs/operations.md#forgetting-persons).
   */
  forget(ids: Iterable<string>): void {
    for (const id of ids) {
      for (const member of this.#persons?.get(id)?.members ?? []) this.#persons?.delete(member);
      this.#persons?.delete(id);
      this.#links.delete(id);
      this.#unsure.delete(id);
    }
  }

  /** Sole writer: an ID on a personless link has no facts, as surely as a new one (what it caches is stored). */
  #hasNoFacts(link: Link | undefined): boolean {
    return this.options.soleWriter && link !== undefined && isPersonless(link);
  }

  #isCertainlyNew(id: string, known: ReadonlyMap<string, Link>): boolean {
    return this.#complete && !known.has(id) && !this.#unsure.has(id);
  }

  /**
   * Every component the IDs belong to, with all its facts (`gatherFacts`, from this node once it has caught up).
   * Persons stored without facts (written before facts existed) get their facts written first (`legacy.ts`).
   */
  async #readComponents(
    ids: ReadonlySet<string>,
    current: Map<string, Link>,
    written: readonly FactRow[],
  ): Promise<Component[]> {
    // every fact and link acknowledged before this flush's read, whichever replica took it, is read
    await this.db.catchUp(IDENTITY_TABLES);
    const { facts, together, visited } = await gatherFacts(
      (frontier) => loadNeighbourhood(this.db, frontier),
      ids,
      current,
      written,
    );
    let read = components(facts, together);
    const legacy = await legacyFacts(this.db, read, current, visited);
    if (legacy.length > 0) {
      await this.db.insert("identity_facts", stamped(legacy));
      read = components([...facts, ...legacy], together);
    }
    await fillOnceGaps(read, (requests) => loadOnces(this.db, requests));
    return read;
  }

  #incomplete(): void {
    this.#complete = false;
    this.#unsure.clear();
  }
}
