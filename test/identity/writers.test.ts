import { describe, expect, spyOn, test } from "bun:test";
import type { IdentityOptions } from "../../src/identity";
import { personIdFor } from "../../src/identity";
import type { StorageObserver } from "../../src/telemetry";
import { count, events, personOf, persons } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";

type Lookups = Partial<Record<"links" | "persons", { hits: number; misses: number }>>;

/** A service whose identity cache lookups are counted, batch after batch. */
async function counted(
  soleWriter: boolean | undefined,
  env: Record<string, string> = {},
  more: Partial<IdentityOptions> = {},
) {
  let lookups: Lookups = {};
  const observer: StorageObserver = {
    flushed() {},
    flushFailed() {},
    storageRefused() {},
    schemaRepaired() {},
    schemaRebuilt() {},
    schemaViewReplaced() {},
    repaired() {},
    retained() {},
    diskLow() {},
    diskRecovered() {},
    repairFailed() {},
    squashed() {},
    squashFailed() {},
    settled() {},
    settleFailed() {},
    preloaded() {},
    cacheLookups(kind, hits, misses) {
      const seen = lookups[kind] ?? { hits: 0, misses: 0 };
      lookups[kind] = { hits: seen.hits + hits, misses: seen.misses + misses };
    },
  };
  const identity = soleWriter === undefined ? more : { ...more, soleWriter };
  const service = await startService({ PUBLIC_API_KEYS: KEY, ...env }, { identity, observer });
  /** Sends one batch and returns what its resolution looked up. */
  const capture = async (batch: object[]): Promise<Lookups> => {
    lookups = {};
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
    return lookups;
  };
  return { service, capture };
}

/**
 * Sends `batch` while `table` refuses every row (a constraint), so the flush fails part-way: answered 503, a table
 * an operator must fix (docs/behaviour.md#when-the-database-refuses-the-events).
 */
async function refused(service: TestService, table: string, batch: object[]): Promise<void> {
  const name = service.db.table(table);
  await service.db.command(`ALTER TABLE ${name} ADD CONSTRAINT refuse CHECK version = 0`);
  const logged = spyOn(console, "error").mockImplementation(() => {});
  try {
    expect((await send(service, { api_key: KEY, batch })).status).toBe(503);
  } finally {
    logged.mockRestore();
    await service.db.command(`ALTER TABLE ${name} DROP CONSTRAINT refuse`);
  }
}

const set = (distinctId: string, properties: object) => ({
  event: "$set",
  distinct_id: distinctId,
  properties: { $set: properties },
});

describe("a sole writer (embedded: chDB locks the data directory to one process)", () => {
  test("persons read after a restart that a flush wrote nothing to are cached: page views read once", async () => {
    const first = await counted(true);
    const page = { $current_url: "https://app/a", $browser: "Chrome" };
    await first.capture([{ event: "$pageview", distinct_id: "pv", properties: { ...page, $set: { email: "x" } } }]);
    await first.service.stop({ drop: false });
    const database = first.service.config.clickhouse.database;
    const { service, capture } = await counted(true, { CLICKHOUSE_DATABASE: database });
    try {
      const lookups = [];
      for (let n = 0; n < 3; n++)
        lookups.push(await capture([{ event: "$pageview", distinct_id: "pv", properties: page }]));
      expect(lookups.map((flush) => flush.persons)).toEqual([{ hits: 0, misses: 1 }, undefined, undefined]);
    } finally {
      await service.stop();
    }
  });

  test("a personless ID whose first profile failed to write: the next update keeps the failed one's facts", async () => {
    const { service, capture } = await counted(true);
    try {
      await capture([{ event: "$pageview", distinct_id: "pl", properties: { $process_person_profile: false } }]);
      await refused(service, "persons", [set("pl", { a: 1 })]);
      await capture([set("pl", { b: 2 })]);
      expect((await personOf(service.db, "pl"))?.properties).toEqual({ a: 1, b: 2 });
    } finally {
      await service.stop();
    }
  });

  test("knows a new ID without a read, and derives a person from the facts it cached: no reads at all", async () => {
    const { service, capture } = await counted(true);
    try {
      // It read every link at startup (none), so a new ID is known to be new: its facts are all in the flush.
      expect(await capture([set("u", { a: 1 })])).toEqual({
        links: { hits: 1, misses: 0 },
        persons: { hits: 1, misses: 0 },
      });
      expect(await capture([set("u", { b: 2 })])).toEqual({
        links: { hits: 1, misses: 0 },
        persons: { hits: 1, misses: 0 },
      });
      // an event that changes no person needs only the link
      expect(await capture([{ event: "$pageview", distinct_id: "u" }])).toEqual({ links: { hits: 1, misses: 0 } });
      expect((await personOf(service.db, "u"))?.properties).toEqual({ a: 1, b: 2 });
    } finally {
      await service.stop();
    }
  });

  test("two IDs of one cached person updating it in one flush: one person with both updates", async () => {
    const { service, capture } = await counted(true);
    try {
      await capture([{ event: "$identify", distinct_id: "two-user", properties: { $anon_distinct_id: "two-anon" } }]);
      expect(await capture([set("two-anon", { a: 1 }), set("two-user", { b: 2 })])).toEqual({
        links: { hits: 2, misses: 0 },
        persons: { hits: 1, misses: 0 },
      });
      expect((await personOf(service.db, "two-anon"))?.properties).toEqual({ a: 1, b: 2 });
    } finally {
      await service.stop();
    }
  });

  test("an update of a cached person rewrites neither its links nor the persons merged into it", async () => {
    const { service, capture } = await counted(true);
    try {
      await capture([set("keep-user", { a: 1 }), set("keep-anon", { b: 2 })]);
      await capture([{ event: "$identify", distinct_id: "keep-user", properties: { $anon_distinct_id: "keep-anon" } }]);
      const rows = async () => [
        await count(service.db, "persons", `id = '${personIdFor("keep-anon")}'`),
        await count(service.db, "person_distinct_ids"),
      ];
      const before = await rows();
      expect(await capture([set("keep-anon", { c: 3 })])).toMatchObject({ persons: { hits: 1, misses: 0 } });
      expect(await rows()).toEqual(before);
      expect((await persons(service.db)).get(personIdFor("keep-anon"))?.is_deleted).toBe(1);
      expect((await personOf(service.db, "keep-anon"))?.properties).toEqual({ a: 1, b: 2, c: 3 });
    } finally {
      await service.stop();
    }
  });

  test("a restarted one holds every stored link from startup, and reads a person's facts once", async () => {
    const first = await counted(true);
    await first.capture([
      set("r", { a: 1 }),
      { event: "$identify", distinct_id: "r", properties: { $anon_distinct_id: "r-anon" } },
    ]);
    await first.service.stop({ drop: false });
    const { service, capture } = await counted(true, { CLICKHOUSE_DATABASE: first.service.config.clickhouse.database });
    try {
      expect(await capture([set("r-anon", { b: 2 })])).toEqual({
        links: { hits: 1, misses: 0 },
        persons: { hits: 0, misses: 1 },
      });
      expect(await capture([set("r", { c: 3 }), { event: "$pageview", distinct_id: "new" }])).toEqual({
        links: { hits: 2, misses: 0 },
        persons: { hits: 2, misses: 0 },
      });
      expect((await personOf(service.db, "r-anon"))?.properties).toEqual({ a: 1, b: 2, c: 3 });
    } finally {
      await service.stop();
    }
  });

  test("when the stored links do not all fit its cache, it reads what the cache does not hold", async () => {
    const first = await counted(true);
    await first.capture([1, 2, 3].map((n) => set(`many-${n}`, { n })));
    await first.service.stop({ drop: false });
    const database = first.service.config.clickhouse.database;
    const { service, capture } = await counted(true, { CLICKHOUSE_DATABASE: database }, { cacheCapacity: 2 });
    try {
      // two of the three stored links were kept; the third, and any new ID, must be read
      const lookups = await capture([1, 2, 3, 4].map((n) => set(`many-${n}`, { again: n })));
      expect(lookups.links!.misses).toBeGreaterThanOrEqual(2);
      expect(lookups.links!.hits + lookups.links!.misses).toBe(4);
      // not knowing every link, it cannot tell that many-4 is new: it reads its facts too
      expect(lookups.persons).toEqual({ hits: 0, misses: 4 });
      expect(new Set((await events(service.db)).map((event) => event.person_id)).size).toBe(4);
      expect((await personOf(service.db, "many-3"))?.properties).toEqual({ n: 3, again: 3 });
    } finally {
      await service.stop();
    }
  });

  test("after a failed write it trusts nothing the flush touched, and reads it all again", async () => {
    const { service, capture } = await counted(true);
    try {
      await capture([set("f-user", { a: 1 }), { event: "$pageview", distinct_id: "f-anon" }]);
      // Facts and persons are written, then the links insert fails: ClickHouse holds what the cache never saw.
      const identify = { event: "$identify", distinct_id: "f-user", properties: { $anon_distinct_id: "f-anon" } };
      await refused(service, "person_distinct_ids", [identify]);
      expect(await capture([identify])).toEqual({
        links: { hits: 0, misses: 2 },
        persons: { hits: 0, misses: 1 },
      });
      expect(await capture([set("f-anon", { b: 2 })])).toEqual({
        links: { hits: 1, misses: 0 },
        persons: { hits: 1, misses: 0 },
      });
      expect((await personOf(service.db, "f-anon"))?.properties).toEqual({ a: 1, b: 2 });
    } finally {
      await service.stop();
    }
  });

  test("past 10,000 IDs left unsure by failed writes, it reads every ID it does not hold", async () => {
    const { service, capture } = await counted(true);
    /** A batch of new IDs whose links insert fails, so each of them is left unsure. */
    const failing = (prefix: string, count: number) =>
      refused(
        service,
        "person_distinct_ids",
        Array.from({ length: count }, (_, i) => ({ event: "$pageview", distinct_id: `${prefix}-${i}` })),
      );
    const pageview = (distinctId: string) => capture([{ event: "$pageview", distinct_id: distinctId }]);
    try {
      await failing("a", 5_000);
      // 5,000 unsure: an ID that is not one of them is still known to be new
      expect(await pageview("new-1")).toEqual({ links: { hits: 1, misses: 0 }, persons: { hits: 1, misses: 0 } });
      await failing("b", 5_001);
      expect(await pageview("new-2")).toEqual({ links: { hits: 0, misses: 1 }, persons: { hits: 0, misses: 1 } });
      expect(await pageview("a-0")).toEqual({ links: { hits: 0, misses: 1 }, persons: { hits: 0, misses: 1 } });
    } finally {
      await service.stop();
    }
  });
});

describe("beside other writers (a ClickHouse server other instances may write to)", () => {
  test("an event that changes a person always reads its facts; cached links serve the rest", async () => {
    const { service, capture } = await counted(false);
    try {
      expect(await capture([set("s", { a: 1 })])).toEqual({
        links: { hits: 0, misses: 1 },
        persons: { hits: 0, misses: 1 },
      });
      expect(await capture([set("s", { b: 2 })])).toEqual({
        links: { hits: 1, misses: 0 },
        persons: { hits: 0, misses: 1 },
      });
      // an event that changes nothing may use the cached link (within the staleness bound)
      expect(await capture([{ event: "$pageview", distinct_id: "s" }])).toEqual({ links: { hits: 1, misses: 0 } });
      expect((await personOf(service.db, "s"))?.properties).toEqual({ a: 1, b: 2 });
    } finally {
      await service.stop();
    }
  });
});

test("by default a process is the sole writer when embedded, and one of several on a server", async () => {
  const { service, capture } = await counted(undefined);
  try {
    const lookups = await capture([set("d", { a: 1 })]);
    expect(lookups.persons).toEqual(
      service.db.backend === "embedded" ? { hits: 1, misses: 0 } : { hits: 0, misses: 1 },
    );
  } finally {
    await service.stop();
  }
});
