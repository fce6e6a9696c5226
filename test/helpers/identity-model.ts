import { expect } from "bun:test";
import type { ClickHouse } from "../../src/storage/clickhouse";
import { personIdFor } from "../../src/storage/identity";
import { events, links, persons } from "./rows";

/**
 * A reference model of the identity rules (docs/identity.md), written plainly and apart from
 * the implementation: maps of distinct ID → person and person → state, one event at a time.
 */
export interface ModelEvent {
  event: string;
  distinct_id: string;
  uuid: string;
  properties: Record<string, unknown>;
}

interface ModelPerson {
  primary: string;
  properties: Record<string, unknown>;
  identified: boolean;
  deleted: boolean;
}

const PLACEHOLDERS = ["anonymous", "null", "undefined", "none", "nan", "0", "[object object]", ""];
const isPlaceholder = (id: string) => PLACEHOLDERS.includes(id.trim().toLowerCase());

export class IdentityModel {
  readonly links = new Map<string, string>();
  readonly persons = new Map<string, ModelPerson>();
  /** uuid → the person the event belongs to. */
  readonly eventPersons = new Map<string, string>();

  apply(event: ModelEvent): void {
    const user = event.distinct_id;
    const other = (
      event.event === "$identify"
        ? event.properties.$anon_distinct_id
        : event.event === "$create_alias"
          ? event.properties.alias
          : undefined
    ) as string | undefined;
    if (other !== undefined && other !== user && !isPlaceholder(other) && !isPlaceholder(user)) {
      const userPerson = this.links.get(user);
      const otherPerson = this.links.get(other);
      if (!userPerson && !otherPerson) {
        this.links.set(user, this.create(user));
        this.links.set(other, this.links.get(user)!);
      } else if (!otherPerson) this.links.set(other, userPerson!);
      else if (!userPerson) this.links.set(user, otherPerson);
      else if (userPerson !== otherPerson) this.merge(otherPerson, userPerson);
    }
    if (!this.links.has(user)) this.links.set(user, this.create(user));
    const personId = this.links.get(user)!;
    const person = this.persons.get(personId)!;
    const { $set, $set_once, $unset } = event.properties as Record<
      string,
      Record<string, unknown> | string[] | undefined
    >;
    for (const [key, value] of Object.entries($set_once ?? {}))
      if (!(key in person.properties)) person.properties[key] = value;
    Object.assign(person.properties, $set ?? {});
    for (const key of ($unset as string[] | undefined) ?? []) delete person.properties[key];
    if (event.event === "$identify" && !person.identified) {
      person.identified = true;
      person.primary = user;
    }
    this.eventPersons.set(event.uuid, personId);
  }

  private create(distinctId: string): string {
    const id = personIdFor(distinctId);
    this.persons.set(id, { primary: distinctId, properties: {}, identified: false, deleted: false });
    return id;
  }

  private merge(fromId: string, intoId: string): void {
    for (const [id, personId] of this.links) if (personId === fromId) this.links.set(id, intoId);
    const from = this.persons.get(fromId)!;
    const into = this.persons.get(intoId)!;
    into.properties = { ...from.properties, ...into.properties };
    if (from.identified && !into.identified) {
      into.identified = true;
      into.primary = from.primary;
    }
    from.deleted = true;
  }
}

/** Everything in ClickHouse agrees with the model: links, persons, and each event's person. */
export async function expectStoredToMatch(
  db: ClickHouse,
  model: IdentityModel,
  { eventPersons = true } = {},
): Promise<void> {
  const [storedLinks, storedPersons] = await Promise.all([links(db), persons(db)]);
  expect(Object.fromEntries([...storedLinks].map(([id, link]) => [id, link.person_id]))).toEqual(
    Object.fromEntries(model.links),
  );
  const expectedPersons = Object.fromEntries(
    [...model.persons].map(([id, p]) => [
      id,
      {
        distinct_id: p.primary,
        properties: p.properties,
        is_identified: p.identified ? 1 : 0,
        is_deleted: p.deleted ? 1 : 0,
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
      },
    ]),
  );
  expect(actualPersons).toEqual(expectedPersons);
  if (eventPersons) {
    const stored = Object.fromEntries((await events(db)).map((e) => [e.uuid, e.person_id]));
    expect(stored).toEqual(Object.fromEntries(model.eventPersons));
  }
}

/** No distinct ID is on a deleted person, and every live person's primary ID is one of its own. */
export async function expectNoSplitPersons(db: ClickHouse): Promise<void> {
  const [storedLinks, storedPersons] = await Promise.all([links(db), persons(db)]);
  for (const [distinctId, link] of storedLinks) {
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

/** Random events over one group's distinct IDs: identify, alias, set, set_once and unset interleaved. */
export function randomEvent(rng: ReturnType<typeof random>, ids: readonly string[]): ModelEvent {
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
  }
  return { event, distinct_id: rng.pick(ids), uuid: Bun.randomUUIDv7(), properties };
}
