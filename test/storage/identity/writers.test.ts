import { describe, expect, spyOn, test } from "bun:test";
import type { StorageObserver } from "../../../src/storage";
import { personOf } from "../../helpers/rows";
import { send, startService } from "../../helpers/service";

const KEY = "key-1";

type Lookups = Partial<Record<"links" | "persons", { hits: number; misses: number }>>;

/** A service whose identity cache lookups are counted, batch after batch. */
async function counted(soleWriter: boolean | undefined, env: Record<string, string> = {}) {
  let lookups: Lookups = {};
  const observer: StorageObserver = {
    flushed() {},
    flushFailed() {},
    schemaRepaired() {},
    cacheLookups(kind, hits, misses) {
      const seen = lookups[kind] ?? { hits: 0, misses: 0 };
      lookups[kind] = { hits: seen.hits + hits, misses: seen.misses + misses };
    },
  };
  const identity = soleWriter === undefined ? {} : { soleWriter };
  const service = await startService({ PUBLIC_API_KEYS: KEY, ...env }, { identity, observer });
  /** Sends one batch and returns what its resolution looked up. */
  const capture = async (batch: object[]): Promise<Lookups> => {
    lookups = {};
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
    return lookups;
  };
  return { service, capture };
}

const set = (distinctId: string, properties: object) => ({
  event: "$set",
  distinct_id: distinctId,
  properties: { $set: properties },
});

describe("a sole writer (embedded: chDB locks the data directory to one process)", () => {
  test("serves every event's links and persons from its caches once it has read or written them", async () => {
    const { service, capture } = await counted(true);
    try {
      // a new ID: its link is looked up, its person created without a read
      expect(await capture([set("u", { a: 1 })])).toEqual({ links: { hits: 0, misses: 1 } });
      expect(await capture([set("u", { b: 2 })])).toEqual({
        links: { hits: 1, misses: 0 },
        persons: { hits: 1, misses: 0 },
      });
      expect(await capture([{ event: "$pageview", distinct_id: "u" }])).toEqual({ links: { hits: 1, misses: 0 } });
      expect((await personOf(service.db, "u"))?.properties).toEqual({ a: 1, b: 2 });
    } finally {
      await service.stop();
    }
  });

  test("a restarted one reads what it does not hold yet, once", async () => {
    const first = await counted(true);
    await first.capture([set("r", { a: 1 })]);
    await first.service.stop({ drop: false });
    const { service, capture } = await counted(true, { CLICKHOUSE_DATABASE: first.service.config.clickhouse.database });
    try {
      expect(await capture([set("r", { b: 2 })])).toEqual({
        links: { hits: 0, misses: 1 },
        persons: { hits: 0, misses: 1 },
      });
      expect(await capture([set("r", { c: 3 })])).toEqual({
        links: { hits: 1, misses: 0 },
        persons: { hits: 1, misses: 0 },
      });
      expect((await personOf(service.db, "r"))?.properties).toEqual({ a: 1, b: 2, c: 3 });
    } finally {
      await service.stop();
    }
  });

  test("after a failed write it trusts nothing the batch touched, and reads it all again", async () => {
    const { service, capture } = await counted(true);
    const table = service.db.table("person_distinct_ids");
    try {
      await capture([set("f-user", { a: 1 }), { event: "$pageview", distinct_id: "f-anon" }]);
      // Persons are written, then the links insert fails: ClickHouse now holds persons the cache never saw.
      await service.db.command(`ALTER TABLE ${table} ADD CONSTRAINT refuse CHECK version = 0`);
      const identify = { event: "$identify", distinct_id: "f-user", properties: { $anon_distinct_id: "f-anon" } };
      const logged = spyOn(console, "error").mockImplementation(() => {});
      try {
        expect((await send(service, { api_key: KEY, batch: [identify] })).status).toBe(500);
      } finally {
        logged.mockRestore();
        await service.db.command(`ALTER TABLE ${table} DROP CONSTRAINT refuse`);
      }
      expect(await capture([identify])).toEqual({
        links: { hits: 0, misses: 2 },
        persons: { hits: 0, misses: 2 },
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
});

describe("beside other writers (a ClickHouse server other instances may write to)", () => {
  test("an event that changes a person reads its link and person from ClickHouse every time", async () => {
    const { service, capture } = await counted(false);
    try {
      expect(await capture([set("s", { a: 1 })])).toEqual({ links: { hits: 0, misses: 1 } });
      expect(await capture([set("s", { b: 2 })])).toEqual({
        links: { hits: 0, misses: 1 },
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
    await capture([set("d", { a: 1 })]);
    const second = await capture([set("d", { b: 2 })]);
    expect(second.links).toEqual(service.db.backend === "embedded" ? { hits: 1, misses: 0 } : { hits: 0, misses: 1 });
  } finally {
    await service.stop();
  }
});
