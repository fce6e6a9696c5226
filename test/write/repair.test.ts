import { expect, spyOn, test } from "bun:test";
import { ClickHouse, literalList } from "../../src/storage";
import { MAX_LIST_BYTES } from "../../src/storage/sql";
import type { StorageObserver } from "../../src/telemetry";
import { expectNoSplitPersons } from "../helpers/identity-model";
import { links, persons } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";

/**
 * Sends `batch` while every insert into `persons` fails: the flush writes its facts, then dies, and the client does
 * not retry (a browser leaving the page, an SDK that gave up).
 */
async function failAfterFacts(service: TestService, batch: object[]): Promise<void> {
  const insert = ClickHouse.prototype.insert;
  const failing = spyOn(ClickHouse.prototype, "insert").mockImplementation(function (this: ClickHouse, table, rows) {
    if (table === "persons") return Promise.reject(new Error("the process died here"));
    return insert.call(this, table, rows);
  });
  const logged = spyOn(console, "error").mockImplementation(() => {});
  try {
    expect((await send(service, { api_key: KEY, batch })).status).toBe(500);
  } finally {
    failing.mockRestore();
    logged.mockRestore();
  }
}

/** IDs joined by stored facts share one live person, every ID has one live link, and it points at a live person. */
async function expectDerived(service: TestService, together: readonly string[][]): Promise<void> {
  const [stored, people] = await Promise.all([links(service.db), persons(service.db)]);
  for (const ids of together) {
    const personIds = new Set(ids.map((id) => stored.get(id)?.person_id));
    expect({ ids, persons: personIds.size }).toEqual({ ids, persons: 1 });
    const person = people.get([...personIds][0]!);
    expect({ ids, deleted: person?.is_deleted }).toEqual({ ids, deleted: 0 });
  }
  await expectNoSplitPersons(service.db);
}

/** An observer that counts the sweeps that found IDs, the IDs they re-derived, and the rows they wrote. */
function sweepCounter(): { observer: StorageObserver; sweeps: () => number; ids: () => number; written: () => number } {
  let sweeps = 0;
  let swept = 0;
  let written = 0;
  const observer: StorageObserver = {
    flushed() {},
    flushFailed() {},
    storageRefused() {},
    cacheLookups() {},
    preloaded() {},
    schemaRepaired() {},
    schemaRebuilt() {},
    schemaViewReplaced() {},
    retained() {},
    diskLow() {},
    diskRecovered() {},
    repaired({ ids, persons, links, overrides }) {
      sweeps++;
      swept += ids;
      written += persons + links + overrides;
    },
    repairFailed() {},
    squashed() {},
    squashFailed() {},
    settled() {},
    settleFailed() {},
  };
  return { observer, sweeps: () => sweeps, ids: () => swept, written: () => written };
}

/**
 * Sweeps every quarter second, on facts a second old: what the service does every REPAIR_INTERVAL_S on facts 5 s
 * old (REPAIR_SETTLE_MS), sooner.
 */
const QUICK = { repairIntervalMs: 250, repairSettleMs: 1_000 } as const;

const MERGE = [
  { event: "$identify", distinct_id: "r-user", properties: { $anon_distinct_id: "r-anon", $set: { plan: "pro" } } },
  { event: "$pageview", distinct_id: "r-new" },
  { event: "$create_alias", distinct_id: "r-new", properties: { alias: "r-alias" } },
];

test("a restart's sweep derives what a failed, never retried write left in the facts", async () => {
  const env = { PUBLIC_API_KEYS: KEY, REPAIR_INTERVAL_S: "0" };
  const first = await startService(env);
  try {
    const before = [
      { event: "$pageview", distinct_id: "r-anon" },
      { event: "$pageview", distinct_id: "r-user" },
    ];
    expect((await send(first, { api_key: KEY, batch: before })).status).toBe(200);
    await failAfterFacts(first, MERGE);
    // the facts join them; the persons and links do not say so yet
    expect((await links(first.db)).get("r-new")).toBeUndefined();
  } finally {
    await first.stop({ drop: false });
  }
  const second = await startService({ ...env, CLICKHOUSE_DATABASE: first.config.clickhouse.database });
  try {
    await expectDerived(second, [
      ["r-anon", "r-user"],
      ["r-new", "r-alias"],
    ]);
    const merged = (await persons(second.db)).get((await links(second.db)).get("r-anon")!.person_id);
    expect(merged?.properties).toEqual({ plan: "pro" });
  } finally {
    await second.stop();
  }
});

test("a running instance's sweep does it too, within one interval of the facts settling", async () => {
  const service = await startService(
    { PUBLIC_API_KEYS: KEY, REPAIR_INTERVAL_S: "1" },
    { identity: { soleWriter: false }, ...QUICK },
  );
  try {
    await failAfterFacts(service, MERGE);
    expect((await links(service.db)).get("r-new")).toBeUndefined();
    const deadline = Date.now() + 20_000;
    while ((await links(service.db)).get("r-alias") === undefined && Date.now() < deadline) await Bun.sleep(250);
    await expectDerived(service, [
      ["r-anon", "r-user"],
      ["r-new", "r-alias"],
    ]);
  } finally {
    await service.stop();
  }
}, 30_000);

test("a sole writer sweeps after a write of its own failed, and only then", async () => {
  const { observer, sweeps } = sweepCounter();
  // a sole writer as the embedded engine is one, on a server too (where the service is not one by default)
  const service = await startService(
    { PUBLIC_API_KEYS: KEY, REPAIR_INTERVAL_S: "1" },
    { identity: { soleWriter: true }, observer, ...QUICK },
  );
  try {
    // writes that all succeed: their facts settle, ticks pass, and nothing is swept
    expect((await send(service, { api_key: KEY, batch: MERGE })).status).toBe(200);
    await Bun.sleep(QUICK.repairSettleMs + 4 * QUICK.repairIntervalMs);
    expect(sweeps()).toBe(0);

    await failAfterFacts(service, [
      { event: "$identify", distinct_id: "s-user", properties: { $anon_distinct_id: "s-anon" } },
    ]);
    const deadline = Date.now() + 20_000;
    while ((await links(service.db)).get("s-anon") === undefined && Date.now() < deadline) await Bun.sleep(250);
    expect(sweeps()).toBeGreaterThan(0);
    await expectDerived(service, [["s-user", "s-anon"]]);
  } finally {
    await service.stop();
  }
}, 30_000);

test("a sweep leaves alone a component whose flush is still writing: a slow write is no failed one", async () => {
  const { observer, written } = sweepCounter();
  // the slow write takes 1 s, well within the settling time: the sweeps while it writes see the component (its first
  // facts are old enough), and must leave it alone
  const settleMs = 2_500;
  const service = await startService(
    { PUBLIC_API_KEYS: KEY, REPAIR_INTERVAL_S: "1" },
    { identity: { soleWriter: false }, observer, repairIntervalMs: QUICK.repairIntervalMs, repairSettleMs: settleMs },
  );
  try {
    const set = (x: number) => [{ event: "$pageview", distinct_id: "slow-a", properties: { $set: { x } } }];
    expect((await send(service, { api_key: KEY, batch: set(1) })).status).toBe(200);
    await Bun.sleep(settleMs + 500); // its facts are now old enough to be swept
    const insert = ClickHouse.prototype.insert;
    const slow = spyOn(ClickHouse.prototype, "insert").mockImplementation(async function (
      this: ClickHouse,
      table,
      rows,
    ) {
      if (table === "persons" && rows.length > 0) await Bun.sleep(1_000); // four sweeps' time
      return insert.call(this, table, rows);
    });
    try {
      expect((await send(service, { api_key: KEY, batch: set(2) })).status).toBe(200);
    } finally {
      slow.mockRestore();
    }
    await Bun.sleep(3 * QUICK.repairIntervalMs);
    expect(written()).toBe(0);
  } finally {
    await service.stop();
  }
}, 30_000);

test("a backlog larger than a sweep's batch is worked through, however many IDs share a moment", async () => {
  const service = await startService(
    { PUBLIC_API_KEYS: KEY, REPAIR_INTERVAL_S: "1" },
    { identity: { soleWriter: false }, repairBatchIds: 20, ...QUICK },
  );
  try {
    // a hundred IDs written in the same few milliseconds: five batches' worth
    const batch = Array.from({ length: 100 }, (_, i) => ({ event: "$pageview", distinct_id: `bulk-${i}` }));
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
    await failAfterFacts(service, [{ event: "$pageview", distinct_id: "late-1" }]);
    const deadline = Date.now() + 20_000;
    while ((await links(service.db)).get("late-1") === undefined && Date.now() < deadline) await Bun.sleep(250);
    expect((await links(service.db)).get("late-1")).toBeDefined();
  } finally {
    await service.stop();
  }
}, 30_000);

test("after a clean stop, the startup sweep writes nothing, though a person's IDs fall in two of its reads", async () => {
  // The web traffic's shape: users who signed in before, anonymous visitors browsing personless, who then sign in,
  // some to an account they have, the rest signing up. The sign-ins go in one flush, so the sweep at startup takes
  // their IDs in ID order: every visitor's anonymous ID (a UUID) before every user's, more than one read's list
  // (MAX_LIST_BYTES) of them, so many persons have their anonymous ID in one read and their user's in the next.
  const start = Date.parse("2026-03-01T10:00:00Z");
  const at = (second: number) => new Date(start + second * 1000).toISOString();
  const visitors = Array.from({ length: 2_000 }, (_, i) => Bun.randomUUIDv5(`visitor-${i}`, "url"));
  const returning = 1_000;
  const userOf = (i: number) => `user-${Bun.randomUUIDv5(`user-${i}`, "url")}`;
  const page = (path: string) => ({ $current_url: `https://app.example.com${path}`, $pathname: path, $lib: "web" });
  const before = Array.from({ length: returning }, (_, i) => ({
    event: "$pageview",
    distinct_id: userOf(i),
    timestamp: at(0),
    properties: { ...page("/"), $set_once: { $initial_current_url: "https://app.example.com/" } },
  }));
  const browsing = visitors.map((anon) => ({
    event: "$pageview",
    distinct_id: anon,
    timestamp: at(60),
    properties: { ...page("/pricing"), $device_id: anon, $process_person_profile: false },
  }));
  const signIns = visitors.map((anon, i) => ({
    event: "$identify",
    distinct_id: userOf(i),
    timestamp: at(120),
    properties: { ...page("/login"), $anon_distinct_id: anon, $device_id: anon, $set: { email: `${i}@example.com` } },
  }));
  const ids = [...visitors, ...visitors.map((_, i) => userOf(i))];
  expect(Buffer.byteLength(literalList(ids))).toBeGreaterThan(MAX_LIST_BYTES);
  expect(Buffer.byteLength(literalList(visitors))).toBeLessThan(MAX_LIST_BYTES);

  const env = { PUBLIC_API_KEYS: KEY, REPAIR_INTERVAL_S: "0" };
  const first = await startService(env);
  try {
    for (const batch of [before, browsing, signIns]) {
      expect((await send(first, { api_key: KEY, batch })).status).toBe(200);
    }
  } finally {
    await first.stop({ drop: false });
  }
  const { observer, ids: swept, written } = sweepCounter();
  const second = await startService({ ...env, CLICKHOUSE_DATABASE: first.config.clickhouse.database }, { observer });
  try {
    expect(swept()).toBe(ids.length);
    expect(written()).toBe(0);
    // what a sweep that counted facts twice wrote outranked what flushes derived after it: this update was lost
    const lastReturning = userOf(returning - 1);
    const lastNew = userOf(visitors.length - 1);
    const plan = [lastReturning, lastNew].map((id) => ({
      event: "$set",
      distinct_id: id,
      timestamp: at(180),
      properties: { $set: { plan: "pro" } },
    }));
    expect((await send(second, { api_key: KEY, batch: plan })).status).toBe(200);
    const [stored, people] = await Promise.all([links(second.db), persons(second.db)]);
    for (const id of [lastReturning, lastNew]) {
      expect({ id, plan: people.get(stored.get(id)!.person_id)?.properties.plan }).toEqual({ id, plan: "pro" });
    }
    await expectDerived(second, [
      [visitors[0]!, userOf(0)],
      [visitors.at(-1)!, lastNew],
    ]);
  } finally {
    await second.stop();
  }
}, 60_000);
