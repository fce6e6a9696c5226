import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/config";
import type { ClickHouse } from "../../src/storage/clickhouse";
import { type RetentionChange, retentionTtl, whollyPast } from "../../src/storage/retention";
import { schemaObjects } from "../../src/storage/schema";
import { literal } from "../../src/storage/sql";
import type { StorageObserver } from "../../src/telemetry";
import { Storage, storageOptions } from "../../src/write";
import { captured } from "../helpers/captured";
import { count, personOf } from "../helpers/rows";
import { clickhouseEnv, openDb, openStorage, uniqueDatabase } from "../helpers/service";
import { standInClickHouse } from "../helpers/stand-in-clickhouse";

const DAY = 86_400_000;

/** A storage observer that keeps what retention reports, and ignores the rest. */
function retentionLog(): { observer: StorageObserver; changes: RetentionChange[] } {
  const changes: RetentionChange[] = [];
  const ignore = () => {};
  const observer: StorageObserver = {
    flushed: ignore,
    flushFailed: ignore,
    storageRefused: ignore,
    cacheLookups: ignore,
    preloaded: ignore,
    repaired: ignore,
    repairFailed: ignore,
    squashed: ignore,
    squashFailed: ignore,
    settled: ignore,
    settleFailed: ignore,
    schemaRepaired: ignore,
    schemaRebuilt: ignore,
    schemaViewReplaced: ignore,
    retained: (change) => changes.push(change),
    diskLow: ignore,
    diskRecovered: ignore,
  };
  return { observer, changes };
}

const iso = (at: number) => new Date(at).toISOString();
const day = (at: number) => iso(at).slice(0, 10).replaceAll("-", "");
const statement = async (db: ClickHouse, table: string) =>
  (await db.rows<{ statement: string }>(`SHOW CREATE TABLE ${db.table(table)}`))[0]!.statement;
const sessionIds = async (db: ClickHouse) =>
  (await db.rows<{ id: string }>(`SELECT DISTINCT session_id AS id FROM ${db.table("sessions")} ORDER BY id`)).map(
    (row) => row.id,
  );

describe("EVENTS_RETENTION_DAYS", () => {
  test("drops the days wholly past it at once, sets a TTL for the rest, never touches persons or links; unset, removes the TTL", async () => {
    // P, a month about two months back: its first day is past the retention, its last day is not
    const now = Date.now();
    const back = new Date(now - 60 * DAY);
    const first = Date.UTC(back.getUTCFullYear(), back.getUTCMonth(), 1);
    const last = Date.UTC(back.getUTCFullYear(), back.getUTCMonth() + 1, 0);
    const days = (now - (now % DAY) - last) / DAY;
    const old = now - 400 * DAY;
    const database = uniqueDatabase();
    const env = { ...clickhouseEnv(), CLICKHOUSE_DATABASE: database };
    const db = await openDb(database);
    try {
      const before = await openStorage(loadConfig(env));
      const { events } = await captured([
        {
          event: "$identify",
          distinct_id: "user-old",
          timestamp: iso(old),
          properties: { $anon_distinct_id: "anon-old", $set: { plan: "pro" }, $session_id: "s-old" },
        },
        { event: "$pageview", distinct_id: "user-p", timestamp: iso(first), properties: { $session_id: "s-first" } },
        {
          event: "$pageview",
          distinct_id: "user-p",
          timestamp: iso(last + DAY / 2),
          properties: { $session_id: "s-last" },
        },
        {
          event: "$pageview",
          distinct_id: "user-new",
          timestamp: iso(now - DAY),
          properties: { $session_id: "s-new" },
        },
      ]);
      await before.ingest(events);
      await before.close();
      const identity = async () =>
        Object.fromEntries(
          await Promise.all(
            ["persons", "person_distinct_ids", "identity_facts", "person_overrides", "groups", "group_facts"].map(
              async (table) => [table, await count(db, table, "1", { final: true })] as const,
            ),
          ),
        );
      const identityBefore = await identity();
      const personBefore = await personOf(db, "anon-old");
      expect(personBefore?.properties).toMatchObject({ plan: "pro" });

      const { observer, changes } = retentionLog();
      const retained = await openStorage(loadConfig({ ...env, EVENTS_RETENTION_DAYS: String(days) }), { observer });
      try {
        const eventsTtl = retentionTtl("timestamp", days);
        const sessionsTtl = retentionTtl("max_timestamp", days);
        expect(changes).toEqual([
          { table: "events", ttl: eventsTtl, dropped: [day(old), day(first)], left: [] },
          { table: "sessions", ttl: sessionsTtl, dropped: [], left: [] },
        ]);
        // the old days are gone at once, parts and all
        const parts = await db.rows(
          `SELECT name FROM system.parts WHERE database = ${literal(database)} AND table = 'events' AND partition_id IN (${literal(day(old))}, ${literal(day(first))}) AND active`,
        );
        expect(parts).toEqual([]);
        expect(await statement(db, "events")).toContain(`\nTTL ${eventsTtl}\n`);
        expect(await statement(db, "events")).toMatch(/ttl_only_drop_parts = 1/);
        expect(await statement(db, "sessions")).toContain(`\nTTL ${sessionsTtl}\n`);
        expect(await statement(db, "sessions")).not.toMatch(/ttl_only_drop_parts/);

        // of P, the last day is kept whole (a day's rows expire together: no merge is needed to remove some)
        const inP = `toYYYYMM(timestamp) = ${day(first).slice(0, 6)}`;
        const kept = await db.rows<{ at: string }>(
          `SELECT toString(timestamp) AS at FROM ${db.table("events")} WHERE ${inP}`,
        );
        expect(kept.map((row) => row.at)).toEqual([
          iso(last + DAY / 2)
            .replace("T", " ")
            .replace("Z", "000"),
        ]);
        expect(await count(db, "events", `distinct_id = 'user-new'`)).toBe(1);
        // a session goes once its last event has: its rows are removed by TTL merges, or this one
        await db.command(`OPTIMIZE TABLE ${db.table("sessions")} FINAL`);
        expect(await sessionIds(db)).toEqual(["s-last", "s-new"]);

        // the person whose events are all gone: still there, with its links and facts; no events read as its
        expect(await identity()).toEqual(identityBefore);
        expect(await personOf(db, "anon-old")).toEqual(personBefore);
        expect(await count(db, "events_resolved", `person_id = ${literal(personBefore!.id)}`)).toBe(0);
        // and a new event from one of its distinct IDs joins it
        await retained.ingest((await captured([{ event: "back", distinct_id: "anon-old" }])).events);
        const [back] = await db.rows<{ person_id: string }>(
          `SELECT toString(person_id) AS person_id FROM ${db.table("events_resolved")} WHERE event = 'back'`,
        );
        expect(back?.person_id).toBe(personBefore!.id);
      } finally {
        await retained.close();
      }

      // started again with the same retention: nothing to do, and no DDL
      const again = retentionLog();
      await (await openStorage(loadConfig({ ...env, EVENTS_RETENTION_DAYS: String(days) }), again)).close();
      expect(again.changes).toEqual([]);

      // unset: everything is kept again
      const unset = retentionLog();
      await (await openStorage(loadConfig(env), unset)).close();
      expect(unset.changes).toEqual([
        { table: "events", ttl: null, dropped: [], left: [] },
        { table: "sessions", ttl: null, dropped: [], left: [] },
      ]);
      expect(await statement(db, "events")).not.toContain("\nTTL ");
      expect(await statement(db, "sessions")).not.toContain("\nTTL ");
    } finally {
      await db.command(`DROP DATABASE IF EXISTS \`${database}\``);
      await db.close();
    }
  });

  test("a TTL of the operator's own is left alone when retention is unset", async () => {
    const database = uniqueDatabase();
    const env = { ...clickhouseEnv(), CLICKHOUSE_DATABASE: database };
    await (await openStorage(loadConfig(env))).close();
    const db = await openDb(database);
    try {
      await db.command(`ALTER TABLE ${db.table("events")} MODIFY TTL toDateTime(timestamp) + INTERVAL 5 YEAR`);
      const { observer, changes } = retentionLog();
      await (await openStorage(loadConfig(env), { observer })).close();
      expect(changes).toEqual([]);
      expect(await statement(db, "events")).toContain("TTL toDateTime(timestamp) + toIntervalYear(5)");
    } finally {
      await db.command(`DROP DATABASE IF EXISTS \`${database}\``);
      await db.close();
    }
  });
});

describe("the retention's partitions", () => {
  test("a day or a month is dropped once its last day ended the retention's days ago, as the TTL's day would expire it", () => {
    const now = Date.UTC(2026, 10, 26, 9); // 26 November 2026
    // a day: 31 October + 26 days = 26 November, so it is past at 25 days, not at 26
    expect(whollyPast("20261031", 25, now)).toBe(true);
    expect(whollyPast("20261031", 26, now)).toBe(false);
    expect(whollyPast("20261101", 25, now)).toBe(false);
    expect(whollyPast("20251024", 397, now)).toBe(true);
    expect(whollyPast("20251025", 397, now)).toBe(false);
    // a month (tables made before schema version 10): the same for its last day
    expect(whollyPast("202610", 25, now)).toBe(true);
    expect(whollyPast("202610", 26, now)).toBe(false);
    expect(whollyPast("202610", 30, now)).toBe(false);
    expect(whollyPast("202509", 400, now)).toBe(true);
    expect(whollyPast("202510", 400, now)).toBe(false);
    expect(retentionTtl("timestamp", 25)).toBe("toDate32(timestamp) + toIntervalDay(26)");
  });
});

describe("on a cluster", () => {
  test("the shards' local tables are altered ON CLUSTER, in statements the engine's parser reads; a month refused is left to the TTL", async () => {
    const cluster = "two_nodes";
    const tables = Object.fromEntries(schemaObjects("default", cluster).map((object) => [object.name, object.engine]));
    const refusal =
      "Code: 359. DB::Exception: Table or Partition in default.events_local was not dropped. (TABLE_SIZE_EXCEEDS_MAX_DROP_SIZE_LIMIT)";
    const clickhouse = standInClickHouse({
      cluster: { name: cluster, nodes: 2 },
      tables,
      partitions: ["202401", "202402", "202403"],
      refuse: (statement) => (statement.includes("'202402'") ? refusal : undefined),
    });
    const { observer, changes } = retentionLog();
    try {
      const config = loadConfig({
        CLICKHOUSE_URL: clickhouse.url,
        CLICKHOUSE_CLUSTER: cluster,
        EVENTS_RETENTION_DAYS: "30",
      });
      await (await Storage.open(storageOptions(config), observer)).close();
    } finally {
      await clickhouse.stop();
    }
    const alters = clickhouse.recorded.map((r) => r.statement).filter((s) => s.startsWith("ALTER"));
    const on = (table: string) => `ALTER TABLE \`default\`.\`${table}_local\` ON CLUSTER \`${cluster}\``;
    expect(alters).toEqual([
      `${on("events")} DROP PARTITION ID '202401'`,
      `${on("events")} DROP PARTITION ID '202402'`, // refused: the rest waits for the TTL
      `${on("events")} MODIFY SETTING materialize_ttl_recalculate_only = 1, ttl_only_drop_parts = 1`,
      `${on("events")} MODIFY TTL toDate32(timestamp) + toIntervalDay(31)`,
      `${on("sessions")} MODIFY SETTING materialize_ttl_recalculate_only = 1`,
      `${on("sessions")} MODIFY TTL toDate32(max_timestamp) + toIntervalDay(31)`,
    ]);
    expect(changes.map(({ cause, ...change }) => change)).toEqual([
      {
        table: "events_local",
        ttl: "toDate32(timestamp) + toIntervalDay(31)",
        dropped: ["202401"],
        left: ["202402", "202403"],
      },
      { table: "sessions_local", ttl: "toDate32(max_timestamp) + toIntervalDay(31)", dropped: [], left: [] },
    ]);
    expect((changes[0]!.cause as { type?: string }).type).toBe("TABLE_SIZE_EXCEEDS_MAX_DROP_SIZE_LIMIT");
    const engine = await openDb(uniqueDatabase());
    try {
      for (const alter of alters) {
        const [row] = await engine.rows<{ formatted: string }>(
          `SELECT formatQuerySingleLine(${literal(alter)}) AS formatted`,
        );
        expect(row?.formatted).toContain(`ON CLUSTER ${cluster}`);
      }
    } finally {
      await engine.close();
    }
  });
});
