import { expect, test } from "bun:test";
import { personIdFor } from "../../src/identity";
import {
  expectNoSplitPersons,
  expectStoredToMatch,
  IdentityModel,
  random,
  randomEvent,
  timestamps,
} from "../helpers/identity-model";
import { events, links, personOf } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";
const TTL_MS = 200;

/** Two service instances, each with its own storage and cache, over one database: neither is its sole writer. */
async function twoInstances(): Promise<[TestService, TestService]> {
  const env = { PUBLIC_API_KEYS: KEY, LINK_CACHE_TTL_MS: String(TTL_MS), LINK_CACHE_ENTRIES: "10000" };
  const seams = { identity: { soleWriter: false } };
  const a = await startService(env, seams);
  const b = await startService({ ...env, CLICKHOUSE_DATABASE: a.config.clickhouse.database }, seams);
  return [a, b];
}

test("two instances fed interleaved batches agree with the model and never split a person", async () => {
  const [a, b] = await twoInstances();
  try {
    const rng = random(Number(process.env.IDENTITY_SEED ?? 7));
    const ids = Array.from({ length: 24 }, (_, i) => (i < 16 ? `anon-${i}` : `user-${i}`));
    const model = new IdentityModel();
    const timestamp = timestamps(rng, 30);
    for (let round = 0; round < 60; round++) {
      const batch = Array.from({ length: 1 + rng.int(20) }, () => randomEvent(rng, ids, timestamp));
      expect((await send(round % 2 === 0 ? a : b, { api_key: KEY, batch })).status).toBe(200);
      model.applyBatch(batch);
    }
    // Events that change nothing may be attributed from a cache up to the TTL old, so only links and persons
    // must match exactly.
    await expectStoredToMatch(a.db, model, { eventPersons: false });
    await expectNoSplitPersons(a.db);
  } finally {
    await b.stop({ drop: false });
    await a.stop();
  }
}, 60_000);

test("an instance sees the other's links once its cache entries are older than the TTL", async () => {
  const [a, b] = await twoInstances();
  try {
    await send(a, {
      api_key: KEY,
      batch: [
        { event: "$pageview", distinct_id: "s-user" },
        { event: "$pageview", distinct_id: "s-anon" },
      ],
    });
    await send(b, {
      api_key: KEY,
      batch: [{ event: "$identify", distinct_id: "s-user", properties: { $anon_distinct_id: "s-anon" } }],
    });
    // Within the TTL, `a` may still put s-anon's events on the merged-away person (s-user was born first, so its
    // person survives); an event that changes nothing writes no link, so it cannot undo the merge.
    await send(a, { api_key: KEY, batch: [{ event: "within_ttl", distinct_id: "s-anon" }] });
    expect((await links(a.db)).get("s-anon")?.person_id).toBe(personIdFor("s-user"));

    await Bun.sleep(TTL_MS + 50);
    await send(a, { api_key: KEY, batch: [{ event: "after_ttl", distinct_id: "s-anon" }] });
    const after = (await events(a.db)).find((e) => e.event === "after_ttl")!;
    expect(after.person_id).toBe(personIdFor("s-user"));
    await expectNoSplitPersons(a.db);
  } finally {
    await b.stop({ drop: false });
    await a.stop();
  }
});

test("an instance that changes a person reads it fresh, whatever its cache says", async () => {
  const [a, b] = await twoInstances();
  try {
    await send(a, {
      api_key: KEY,
      batch: [{ event: "$pageview", distinct_id: "w-user", properties: { $set: { plan: "free" } } }],
    });
    await send(b, { api_key: KEY, batch: [{ event: "e", distinct_id: "w-user", properties: { $set: { seats: 3 } } }] });
    // `a` has w-user cached with only {plan}; its update must build on what `b` wrote
    await send(a, {
      api_key: KEY,
      batch: [{ event: "e", distinct_id: "w-user", properties: { $set_once: { source: "ad" } } }],
    });
    const person = await personOf(a.db, "w-user");
    expect(person?.id).toBe(personIdFor("w-user"));
    expect(person?.properties).toEqual({ plan: "free", seats: 3, source: "ad" });
  } finally {
    await b.stop({ drop: false });
    await a.stop();
  }
});

test("after an $unset, the first $set_once that follows it wins, in every arrival order, on either instance", async () => {
  const [a, b] = await twoInstances();
  try {
    const at = (second: number) => `2026-03-01T00:00:0${second}Z`;
    const updates = [
      { properties: { $unset: ["plan"] }, timestamp: at(2) },
      { properties: { $set_once: { plan: "first" } }, timestamp: at(4) },
      { properties: { $set_once: { plan: "second" } }, timestamp: at(6) },
      { properties: { $set_once: { plan: "before" } }, timestamp: at(1) },
    ];
    const orders = [
      [0, 1, 2, 3],
      [2, 1, 0, 3],
      [3, 2, 0, 1],
      [1, 2, 3, 0],
    ];
    for (const [n, order] of orders.entries()) {
      const id = `once-${n}`;
      for (const [i, update] of order.entries()) {
        const batch = [{ event: "e", distinct_id: id, ...updates[update] }];
        expect((await send(i % 2 === 0 ? a : b, { api_key: KEY, batch })).status).toBe(200);
      }
      expect({ id, properties: (await personOf(a.db, id))?.properties }).toEqual({ id, properties: { plan: "first" } });
    }
    // an $unset that arrives late, between the two: the one after it wins now
    const batch = [{ event: "e", distinct_id: "once-0", properties: { $unset: ["plan"] }, timestamp: at(5) }];
    expect((await send(b, { api_key: KEY, batch })).status).toBe(200);
    expect((await personOf(a.db, "once-0"))?.properties).toEqual({ plan: "second" });
  } finally {
    await b.stop({ drop: false });
    await a.stop();
  }
}, 60_000);
