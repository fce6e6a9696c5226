import { expect } from "bun:test";
import { PERSONLESS, personIdFor } from "../../src/identity/person";
import type { ClickHouse } from "../../src/storage/clickhouse";
import { events, links, persons } from "./rows";

/**
 * A reference model of the identity rules (docs/identity.md), written plainly and apart from the implementation:
 * it keeps every event's effect as a record and computes persons from the records when asked, by the rules as the
 * docs state them. Events must have distinct timestamps, so the rules' order is the timestamps' alone.
 *
 * Applying events in the order a process applied them tells which IDs were new (a person is born to an ID seen
 * for the first time); everything else follows from the records whatever that order was.
 */
export interface ModelEvent {
  event: string;
  distinct_id: string;
  uuid: string;
  /** ISO 8601, distinct across the events of one model. */
  timestamp: string;
  properties: Record<string, unknown>;
}

interface Birth {
  readonly distinctId: string;
  readonly personId: string;
  readonly at: string;
}

interface Update {
  readonly at: string;
  readonly key: string;
  readonly op: "set" | "unset" | "set_once";
  readonly value?: unknown;
}

export interface ModelPerson {
  primary: string;
  properties: Record<string, unknown>;
  identified: boolean;
  deleted: boolean;
  createdAt: string;
}

const PLACEHOLDERS = ["anonymous", "null", "undefined", "none", "nan", "0", "[object object]", ""];
const isPlaceholder = (id: string) => PLACEHOLDERS.includes(id.trim().toLowerCase());

/** The ID a linking event puts on its distinct ID's person, if any. */
export function linkedIdOf(event: ModelEvent): string | undefined {
  const other = (
    event.event === "$identify"
      ? event.properties.$anon_distinct_id
      : event.event === "$create_alias"
        ? event.properties.alias
        : undefined
  ) as string | undefined;
  const user = event.distinct_id;
  return other !== undefined && other !== user && !isPlaceholder(other) && !isPlaceholder(user) ? other : undefined;
}

export class IdentityModel {
  /**
   * Whether the service holds every person it writes to (a sole writer): then a `$set_once` of a key its person
   * already has from an earlier `$set_once`, and no `$unset` as its latest write, is not recorded
   * (docs/scale-out.md#what-a-flush-does-not-write), so an `$unset` dated before it that arrives later leaves the
   * key unset. Beside other writers every update is recorded.
   */
  readonly #holdsPersons: boolean;
  /** Each ID's neighbours in the graph of joins. */
  readonly #joins = new Map<string, Set<string>>();
  readonly #seen = new Set<string>();
  readonly #births: Birth[] = [];
  readonly #identified: { distinctId: string; at: string }[] = [];
  readonly #updates = new Map<string, Update[]>();
  /** IDs whose events were all personless: linked to the person their first profile makes, which none has. */
  readonly #personless = new Set<string>();
  /** Those of them when the flush being applied began: what the service's flush knows of them. */
  #personlessBefore = new Set<string>();
  /** uuid → the person the event belongs to, as of the end of the batch it came in. */
  readonly eventPersons = new Map<string, string>();

  constructor({ holdsPersons = false } = {}) {
    this.#holdsPersons = holdsPersons;
  }

  /** Applies a batch the service wrote in one flush, in order, then settles its events' persons. */
  applyBatch(batch: readonly ModelEvent[]): void {
    this.#personlessBefore = new Set([...this.#personless].filter((id) => !this.#seen.has(id)));
    for (const event of batch) this.apply(event);
    for (const event of batch) this.eventPersons.set(event.uuid, this.personOf(event.distinct_id));
  }

  apply(event: ModelEvent): void {
    const user = event.distinct_id;
    const other = linkedIdOf(event);
    const at = new Date(event.timestamp).toISOString();
    const links = event.event === "$identify" || event.event === "$create_alias";
    if (!links && event.properties.$process_person_profile === false) {
      if (!this.#seen.has(user)) this.#personless.add(user);
      return;
    }
    // an ID on a personless link (as the flush began) is born to it by its first profile
    const personless = (id: string) => this.#personlessBefore.has(id) && !this.#seen.has(id);
    if ((!this.#seen.has(user) && (other === undefined || !this.#seen.has(other))) || personless(user)) {
      this.#births.push({ distinctId: user, personId: personIdFor(user), at });
    }
    if (other !== undefined && personless(other)) {
      // stamped after the event's own ID's birth (the service's next arrival stamp), whatever the person ids
      this.#births.push({ distinctId: other, personId: personIdFor(other), at: `${at}\u0001` });
    }
    this.#seen.add(user);
    this.#neighbours(user);
    if (other !== undefined) {
      this.#seen.add(other);
      this.#neighbours(user).add(other);
      this.#neighbours(other).add(user);
    }
    if (event.event === "$identify") this.#identified.push({ distinctId: user, at });
    const { $set, $set_once, $unset } = event.properties as Record<string, Record<string, unknown> | undefined>;
    const updates = this.#updates.get(user) ?? [];
    this.#updates.set(user, updates);
    const person = this.component(user);
    for (const [key, value] of Object.entries($set_once ?? {}))
      if (!this.#holdsPersons || !this.#holdsOnce(person, key, at)) updates.push({ at, key, op: "set_once", value });
    for (const [key, value] of Object.entries($set ?? {}))
      if (!($unset as string[] | undefined)?.includes(key)) {
        updates.push({ at, key, op: "set", value });
      }
    for (const key of ($unset as string[] | undefined) ?? []) updates.push({ at, key, op: "unset" });
  }

  /** Whether the person of `ids` has a `$set_once` of `key` before `at`, and its latest write is no `$unset`. */
  #holdsOnce(ids: Set<string>, key: string, at: string): boolean {
    const updates = [...ids].flatMap((id) => this.#updates.get(id) ?? []).filter((update) => update.key === key);
    const within = { set_once: 0, set: 1, unset: 2 } as const;
    const writes = updates
      .filter((update) => update.op !== "set_once")
      .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : within[a.op] - within[b.op]));
    const onceBefore = updates.some((update) => update.op === "set_once" && update.at < at);
    return onceBefore && writes.at(-1)?.op !== "unset";
  }

  /** Every ID joined to this one, itself included. */
  component(distinctId: string): Set<string> {
    const found = new Set([distinctId]);
    for (const id of found) for (const next of this.#neighbours(id)) found.add(next);
    return found;
  }

  /** The person an ID is on: the one the earliest birth among its component's IDs created (personless: its own). */
  personOf(distinctId: string): string {
    if (!this.#seen.has(distinctId)) return personIdFor(distinctId);
    return this.#survivor(this.component(distinctId)).personId;
  }

  #survivor(ids: Set<string>): Birth {
    const births = this.#births.filter((birth) => ids.has(birth.distinctId));
    births.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.personId < b.personId ? -1 : 1));
    return births[0]!;
  }

  /** Every ID's person. */
  links(): Map<string, string> {
    return new Map([...this.#seen, ...this.#personless].map((id) => [id, this.personOf(id)]));
  }

  /** Every person ever born, the survivors live and the rest deleted. */
  persons(): Map<string, ModelPerson> {
    const result = new Map<string, ModelPerson>();
    for (const birth of this.#births) {
      const ids = this.component(birth.distinctId);
      const survivor = this.#survivor(ids);
      if (survivor.personId !== birth.personId) {
        result.set(birth.personId, {
          primary: birth.distinctId,
          properties: {},
          identified: false,
          deleted: true,
          createdAt: birth.at,
        });
        continue;
      }
      const identified = this.identifiedPrimary(birth.distinctId);
      result.set(birth.personId, {
        primary: identified ?? survivor.distinctId,
        properties: this.properties(birth.distinctId),
        identified: identified !== undefined,
        deleted: false,
        createdAt: survivor.at,
      });
    }
    return result;
  }

  /** The primary ID of an ID's person if it is identified: its earliest identified ID. Order-independent. */
  identifiedPrimary(distinctId: string): string | undefined {
    const ids = this.component(distinctId);
    return this.#identified.filter((i) => ids.has(i.distinctId)).sort((a, b) => (a.at < b.at ? -1 : 1))[0]?.distinctId;
  }

  /**
   * The properties of an ID's person, per key, as the contract folds its updates in event order: `$set` writes,
   * `$unset` removes, `$set_once` writes only a key that is absent; within one event `$set_once` comes first and
   * `$unset` last. Order-independent.
   */
  properties(distinctId: string): Record<string, unknown> {
    const ids = this.component(distinctId);
    const byKey = Map.groupBy(
      [...ids].flatMap((id) => this.#updates.get(id) ?? []),
      (update) => update.key,
    );
    const properties: Record<string, unknown> = {};
    const within = { set_once: 0, set: 1, unset: 2 } as const;
    for (const [key, updates] of byKey) {
      updates.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : within[a.op] - within[b.op]));
      for (const { op, value } of updates) {
        if (op === "set" || (op === "set_once" && !Object.hasOwn(properties, key))) properties[key] = value;
        else if (op === "unset") delete properties[key];
      }
    }
    return properties;
  }

  #neighbours(id: string): Set<string> {
    let set = this.#joins.get(id);
    if (set === undefined) {
      set = new Set();
      this.#joins.set(id, set);
    }
    return set;
  }
}

/** Everything in ClickHouse agrees with the model: links, persons, and (unless told not to) each event's person. */
export async function expectStoredToMatch(
  db: ClickHouse,
  model: IdentityModel,
  { eventPersons = true } = {},
): Promise<void> {
  const [storedLinks, storedPersons] = await Promise.all([links(db), persons(db)]);
  expect(Object.fromEntries([...storedLinks].map(([id, link]) => [id, link.person_id]))).toEqual(
    Object.fromEntries(model.links()),
  );
  const expectedPersons = Object.fromEntries(
    [...model.persons()].map(([id, p]) => [
      id,
      {
        distinct_id: p.primary,
        properties: p.properties,
        is_identified: p.identified ? 1 : 0,
        is_deleted: p.deleted ? 1 : 0,
        created_at: clickhouseTime(p.createdAt),
      },
    ]),
  );
  const actualPersons = Object.fromEntries(
    [...storedPersons].map(([id, p]) => [
      id,
      {
        distinct_id: p.distinct_id,
        properties: p.properties,
        is_identified: p.is_identified,
        is_deleted: p.is_deleted,
        created_at: p.created_at,
      },
    ]),
  );
  expect(actualPersons).toEqual(expectedPersons);
  if (eventPersons) {
    const stored = Object.fromEntries((await events(db)).map((e) => [e.uuid, e.person_id]));
    expect(stored).toEqual(Object.fromEntries(model.eventPersons));
  }
}

/** `2026-01-01T00:00:00.123Z` as ClickHouse prints a DateTime64(6): `2026-01-01 00:00:00.123000`. */
function clickhouseTime(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}000`;
}

/** No two rows of a person share a version with different content: `FINAL` and `argMax` would disagree. */
export async function expectOneRowPerVersion(db: ClickHouse): Promise<void> {
  const clashes = await db.rows(
    `SELECT toString(id) AS id, toString(version) AS version, groupUniqArray(properties) AS contents
     FROM ${db.table("persons")} GROUP BY id, version HAVING length(contents) > 1`,
  );
  expect(clashes).toEqual([]);
}

/** No distinct ID is on a deleted person, and every live person's primary ID is one of its own. */
export async function expectNoSplitPersons(db: ClickHouse): Promise<void> {
  const [storedLinks, storedPersons] = await Promise.all([links(db), persons(db)]);
  for (const [distinctId, link] of storedLinks) {
    if (link.version === PERSONLESS) continue; // no person until the ID's first profile
    expect({ distinctId, person: storedPersons.get(link.person_id)?.is_deleted }).toEqual({ distinctId, person: 0 });
  }
  for (const person of storedPersons.values()) {
    if (person.is_deleted === 0) expect(storedLinks.get(person.distinct_id)?.person_id).toBe(person.id);
  }
}

/** A small seeded PRNG (mulberry32), so a failing sequence can be replayed from its seed. */
export function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (below: number) => Math.floor(next() * below),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
  };
}

const KEYS = ["plan", "name", "seats", "source", "color"];
const PLACEHOLDER_IDS = ["anonymous", "null", "NaN", "[object Object]", "undefined", " "];

/**
 * Timestamps no two events share: the `n`th call of a model's clock, shuffled within windows of `spread` so that
 * events do not arrive in timestamp order (1: in order).
 */
export function timestamps(rng: ReturnType<typeof random>, spread = 1) {
  const used = new Set<number>();
  let n = 0;
  return (): string => {
    let ms = 1_767_225_600_000 + (n++ + rng.int(spread)) * 1000 + rng.int(1000);
    while (used.has(ms)) ms++;
    used.add(ms);
    return new Date(ms).toISOString();
  };
}

/**
 * Random events over one group's distinct IDs: identify, alias, set, set_once and unset interleaved; with
 * `personless`, that share of the others say `$process_person_profile: false`.
 */
export function randomEvent(
  rng: ReturnType<typeof random>,
  ids: readonly string[],
  timestamp: () => string,
  { personless = 0 } = {},
): ModelEvent {
  const properties: Record<string, unknown> = {};
  const roll = rng.next();
  const value = () => rng.pick([rng.int(100), `v${rng.int(5)}`, null, { nested: rng.int(3) }]);
  if (rng.next() < 0.35)
    properties.$set = Object.fromEntries([rng.pick(KEYS), rng.pick(KEYS)].map((key) => [key, value()]));
  if (rng.next() < 0.25) properties.$set_once = { [rng.pick(KEYS)]: value() };
  if (rng.next() < 0.1) properties.$unset = [rng.pick(KEYS)];
  let event = rng.pick(["$pageview", "clicked", "purchased"]);
  if (roll < 0.2) {
    event = "$identify";
    properties.$anon_distinct_id = rng.next() < 0.1 ? rng.pick(PLACEHOLDER_IDS) : rng.pick(ids);
  } else if (roll < 0.25) {
    event = "$identify";
  } else if (roll < 0.35) {
    event = "$create_alias";
    properties.alias = rng.next() < 0.1 ? rng.pick(PLACEHOLDER_IDS) : rng.pick(ids);
  } else if (personless > 0 && rng.next() < personless) {
    properties.$process_person_profile = false;
  }
  return { event, distinct_id: rng.pick(ids), uuid: Bun.randomUUIDv7(), timestamp: timestamp(), properties };
}
