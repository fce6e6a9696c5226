import { expect, test } from "bun:test";
import { parseTimestamp } from "../../src/capture";
import type { CapturedEvent, Timestamp } from "../../src/contract";
import type { Component } from "../../src/identity/component";
import { components } from "../../src/identity/components";
import { componentRows } from "../../src/identity/derive";
import type { FactRow } from "../../src/identity/facts";
import { factsOf } from "../../src/identity/flush-facts";
import { fillOnceGaps, gatherFacts } from "../../src/identity/gather";
import type { Link } from "../../src/identity/person";
import { personIntentOf } from "../../src/identity/person-rules";
import type { DistinctIdRow, OverrideRow, PersonRow } from "../../src/identity/rows";
import { type ModelEvent, random, randomEvent, timestamps } from "../helpers/identity-model";
import { settled } from "../helpers/onces";
import { type EventRow, type InsertOutcome, ReplicatedStore } from "../helpers/replicas";

/**
 * A deterministic simulation of the cluster design (docs/scale-out.md#clusters): three replicas of the identity
 * tables, an instance on each node, clients sending random identity traffic to them, and faults at every step:
 * replicas that lag, quorum inserts that time out with their part kept or are refused, a node down and back, an
 * instance dying between any two of a flush's inserts, clients that retry on another instance and clients that
 * never retry. The flush is the resolver's, step for step, over its own code for facts, the reads that gather a
 * component, folds and the rows a component writes (`factsOf`, `gatherFacts`, `components`, `componentRows`);
 * the store stands in for ClickHouse's replicated tables (test/helpers/replicas.ts).
 *
 * Checked: (A) no flush derives from a replica that lacks a fact acknowledged before its read, which is what the
 * catching up before each read guarantees; and (B) at rest, after one repair sweep, IDs joined by facts share one
 * live person, every link points at it, every person merged away is deleted with an override to it, and every
 * stored event's person, read through the overrides, is its distinct ID's. Without the catching up, (A) fails on
 * some seeds: the simulation tells the design from a weaker one.
 */

const REPLICAS = 3;
const SEEDS = Number(process.env.SIMULATION_SEEDS ?? 2000);

interface Run {
  /** Flush reads that lacked an acknowledged fact of an ID they read. */
  readonly staleReads: number;
  readonly flushes: number;
  readonly faults: Readonly<Record<string, number>>;
}

async function simulate(seed: number, catchUp: boolean): Promise<Run> {
  const rng = random(seed);
  const store = new ReplicatedStore(REPLICAS, rng);
  const timestamp = timestamps(rng, 30);
  const ids = Array.from({ length: 16 }, (_, i) => (i < 10 ? `anon-${i}` : `user-${i}`));
  /** Facts parts acknowledged so far, in order. */
  const acknowledged: number[] = [];
  const faults: Record<string, number> = {};
  const fault = (kind: string) => {
    faults[kind] = (faults[kind] ?? 0) + 1;
  };
  let arrival = 0;
  let staleReads = 0;
  let flushes = 0;

  /** Reads the components of `start` on `node` as the resolver does; counts a read that misses an acknowledged fact. */
  const readComponents = async (
    node: number,
    start: ReadonlySet<string>,
    current: Map<string, Link>,
    written: FactRow[],
  ) => {
    const ackedBefore = [...acknowledged];
    const { facts, together, visited } = await gatherFacts(
      (frontier) => store.neighbourhood(node, frontier),
      start,
      current,
      written,
    );
    const lacking = ackedBefore.some(
      (part) =>
        !store.held[node]!.has(part) && store.log[part]!.rows.some((row) => visited.has((row as FactRow).distinct_id)),
    );
    if (lacking) staleReads++;
    const read = components(facts, together);
    await fillOnceGaps(read, (requests) => store.onces(node, requests));
    return read;
  };

  /** The rows a derivation writes, as the resolver makes them (`componentRows`), and each ID's person. */
  const rowsOf = (derived: readonly Component[], current: ReadonlyMap<string, Link>) => {
    const written = { persons: [] as PersonRow[], overrides: [] as OverrideRow[], links: [] as DistinctIdRow[] };
    const personOf = new Map<string, string>();
    for (const component of derived) {
      const rows = componentRows(component, (id) => current.get(id));
      if (rows === undefined) continue;
      written.persons.push(...rows.persons);
      written.overrides.push(...rows.overrides);
      written.links.push(...rows.links);
      for (const id of component.members) personOf.set(id, rows.person.id);
    }
    return { ...written, personOf };
  };

  /** One flush of `batch` on the instance at `node`; an instance may die after any insert. */
  const flush = async (node: number, batch: readonly CapturedEvent[]): Promise<"acknowledged" | "failed"> => {
    flushes++;
    const intents = batch.map((event) => personIntentOf(event));
    const stored = store.links(node);
    const known = new Map<string, Link>();
    for (const { event, linkedId } of intents) {
      for (const id of [event.distinctId, linkedId])
        if (id !== undefined && stored.has(id)) known.set(id, stored.get(id)!);
    }
    const facts = factsOf(
      intents,
      (id) => known.get(id),
      () => ++arrival,
    );
    const step = (outcome: InsertOutcome): boolean => {
      if (outcome !== "acknowledged") fault(`insert ${outcome}`);
      else if (rng.next() < 0.04) fault("instance died");
      else return true;
      return false;
    };
    const partsBefore = store.log.length;
    if (!step(store.insert(node, "identity_facts", facts))) return "failed";
    if (facts.length > 0) acknowledged.push(partsBefore);
    if (catchUp && !store.catchUp(node)) {
      fault("catch-up timed out");
      return "failed";
    }
    const current = new Map(known);
    const start = new Set(components(facts).flatMap((component) => [...component.members]));
    const derived = start.size === 0 ? [] : await readComponents(node, start, current, facts);
    const rows = rowsOf(derived, current);
    const events: EventRow[] = intents.map(({ event }) => ({
      uuid: event.uuid,
      distinct_id: event.distinctId,
      person_id: rows.personOf.get(event.distinctId) ?? current.get(event.distinctId)!.personId,
    }));
    if (!step(store.insert(node, "persons", rows.persons))) return "failed";
    if (!step(store.insert(node, "person_overrides", rows.overrides))) return "failed";
    if (!step(store.insert(node, "person_distinct_ids", rows.links))) return "failed";
    if (!step(store.insert(node, "events", events))) return "failed";
    return "acknowledged";
  };

  for (let round = 0; round < 40; round++) {
    // a node goes down or comes back; now and then two are down at once (no majority: inserts refused)
    if (rng.next() < 0.15) {
      const node = rng.int(REPLICAS);
      store.up[node] = !store.up[node];
      fault(store.up[node] ? "node back" : "node down");
    }
    store.replicate();
    const batch = Array.from({ length: 1 + rng.int(5) }, () => capturedOf(randomEvent(rng, ids, timestamp)));
    const retries = rng.next() < 0.7; // an SDK that retries; else sendBeacon on a closing page
    for (let attempt = 0; attempt < (retries ? 6 : 1); attempt++) {
      if ((await flush(rng.int(REPLICAS), batch)) === "acknowledged") break;
      store.replicate();
      if (attempt === 5) store.settle(); // the operator brings the nodes back
    }
  }

  // at rest: every node back and caught up, then one repair sweep over what was written
  store.settle();
  const current = new Map<string, Link>();
  const all = new Set(store.rows(0, "identity_facts").map((fact) => fact.distinct_id));
  const swept = rowsOf(await readComponents(0, all, current, []), current);
  const storedPersons = store.persons(0);
  store.insert(
    0,
    "persons",
    swept.persons.filter((row) => (storedPersons.get(row.id)?.version ?? -1) < row.version),
  );
  store.insert(0, "person_overrides", swept.overrides);
  store.insert(0, "person_distinct_ids", swept.links);
  store.settle();
  expectAtRest(store);
  return { staleReads, flushes, faults };
}

/** (B): the stored persons, links, overrides and events are what all the facts give. */
function expectAtRest(store: ReplicatedStore): void {
  const links = store.links(0);
  const persons = store.persons(0);
  const overrides = store.overrides(0);
  const facts = store.rows(0, "identity_facts");
  for (const component of settled(components(facts), facts)) {
    const person = component.person();
    if (person === undefined) continue;
    for (const id of component.members)
      expect({ id, person: links.get(id)?.personId }).toEqual({ id, person: person.id });
    expect({ person: person.id, deleted: persons.get(person.id)?.is_deleted }).toEqual({
      person: person.id,
      deleted: 0,
    });
    // the survivor's own override, if it has one, points back at it
    expect({ person: person.id, to: overrides.get(person.id)?.override_person_id ?? person.id }).toEqual({
      person: person.id,
      to: person.id,
    });
    for (const away of component.mergedAway(person)) {
      expect({
        away: away.id,
        deleted: persons.get(away.id)?.is_deleted,
        to: overrides.get(away.id)?.override_person_id,
      }).toEqual({
        away: away.id,
        deleted: 1,
        to: person.id,
      });
    }
  }
  for (const event of store.rows(0, "events")) {
    const resolved = overrides.get(event.person_id)?.override_person_id ?? event.person_id;
    expect({ event: event.uuid, person: resolved }).toEqual({
      event: event.uuid,
      person: links.get(event.distinct_id)!.personId,
    });
  }
}

function capturedOf(event: ModelEvent): CapturedEvent {
  const timestamp = parseTimestamp(event.timestamp)!;
  return {
    uuid: event.uuid,
    event: event.event,
    distinctId: event.distinct_id,
    properties: event.properties,
    timestamp,
    sessionId: "",
    windowId: "",
    currentUrl: "",
    host: "",
    ip: "",
    location: undefined,
    receivedAt: timestamp as Timestamp,
    topLevelSets: {},
    personless: false,
    updatesNewPersonOnly: false,
  };
}

test(`${SEEDS} seeded runs of the cluster: no flush derives from a stale replica, and at rest all is as the facts give`, async () => {
  const faults: Record<string, number> = {};
  let flushes = 0;
  for (let seed = Number(process.env.SIMULATION_FROM ?? 1); seed <= SEEDS; seed++) {
    if (process.env.SIMULATION_DEBUG) console.log("seed", seed);
    const run = await simulate(seed, true);
    expect({ seed, staleReads: run.staleReads }).toEqual({ seed, staleReads: 0 });
    flushes += run.flushes;
    for (const [kind, count] of Object.entries(run.faults)) faults[kind] = (faults[kind] ?? 0) + count;
  }
  console.log(`simulation: ${SEEDS} seeds, ${flushes} flushes, faults ${JSON.stringify(faults)}`);
  for (const kind of ["insert timed out", "insert refused", "instance died", "node down", "catch-up timed out"]) {
    expect({ kind, seen: (faults[kind] ?? 0) > 0 }).toEqual({ kind, seen: true });
  }
}, 120_000); // CPU-bound: the global timeout is too tight on shared cores

test("without catching up before its read, some flush derives from a replica that lacks an acknowledged fact", async () => {
  let stale = 0;
  for (let seed = 1; seed <= 200 && stale === 0; seed++) stale += (await simulate(seed, false)).staleReads;
  expect(stale).toBeGreaterThan(0);
});
