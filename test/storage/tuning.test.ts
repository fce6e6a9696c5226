import { describe, expect, test } from "bun:test";
import { type Fsync, loadConfig } from "../../src/config";
import { ClickHouse } from "../../src/storage/clickhouse";
import { createSchema, TABLES } from "../../src/storage/schema";
import { literal } from "../../src/storage/sql";
import { embeddedTableSettings, tuneEmbeddedEngine } from "../../src/storage/tuning";
import { captured } from "../helpers/captured";
import { count, createTableQuery } from "../helpers/rows";
import { clickhouseEnv, openDb, openStorage, uniqueDatabase } from "../helpers/service";

const embedded = !process.env.CLICKHOUSE_URL;
const FSYNC_MERGES = { min_compressed_bytes_to_fsync_after_merge: 1 };

/** The embedded engine's configuration at `FSYNC=fsync`, the rest as by default. */
function engineAt(fsync: Fsync, env: Record<string, string> = {}) {
  const engine = loadConfig({ ...env, FSYNC: fsync }).clickhouse;
  if (engine.kind !== "embedded") throw new Error("no CLICKHOUSE_URL here");
  return engine;
}

describe("table settings", () => {
  test("the storage tunes every embedded table when it opens, also tables made before; a server keeps its own", async () => {
    const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: uniqueDatabase() });
    const settings = embeddedTableSettings(engineAt("merges"));
    const db = await openDb(config.clickhouse.database);
    const settingsOf = async (table: string) => {
      const query = await createTableQuery(db, table);
      const names = Object.keys(settings[table]!);
      return Object.fromEntries(names.map((name) => [name, new RegExp(`\\b${name} = (\\d+)`).exec(query)?.[1]]));
    };
    const expected = (table: string) =>
      Object.fromEntries(
        Object.entries(settings[table]!).map(([name, value]) => [name, embedded ? String(value) : undefined]),
      );
    try {
      await (await openStorage(config)).close();
      const names = Object.keys(settings.events!);
      await db.command(`ALTER TABLE ${db.table("events")} RESET SETTING ${names.join(", ")}`); // as made before
      expect(Object.values(await settingsOf("events"))).toEqual(names.map(() => undefined));
      await (await openStorage(config)).close();
      // every table: what a power loss may take is the same for all of them (FSYNC)
      expect(Object.keys(settings).sort()).toEqual(TABLES.map(({ name }) => name).sort());
      for (const table of Object.keys(settings)) {
        expect(await settingsOf(table)).toEqual(expected(table));
        expect(settings[table]).toMatchObject(FSYNC_MERGES);
      }
      // the tables that stay small wait for more parts before rewriting their largest, at the engine's width
      for (const table of ["persons", "person_distinct_ids", "identity_facts"]) {
        expect(settings[table]).toMatchObject({ merge_selector_base: 20 });
        expect(await createTableQuery(db, table)).not.toContain("max_parts_to_merge_at_once");
      }
    } finally {
      await db.command(`DROP DATABASE IF EXISTS \`${db.database}\``);
      await db.close();
    }
  });
});

describe("SETTLE_AFTER_S", () => {
  test.skipIf(!embedded)(
    "a day of events no longer written to is merged into one part, copies collapsed; the view reads the same",
    async () => {
      const env = { ...clickhouseEnv(), CLICKHOUSE_DATABASE: uniqueDatabase(), SETTLE_AFTER_S: "1" };
      const db = await openDb(env.CLICKHOUSE_DATABASE);
      const storage = await openStorage(loadConfig(env));
      const partsByDay = async () =>
        Object.fromEntries(
          (
            await db.rows<{ day: string; parts: string }>(
              `SELECT partition_id AS day, toString(count()) AS parts FROM system.parts
               WHERE database = ${literal(db.database)} AND table = 'events' AND active GROUP BY day ORDER BY day`,
            )
          ).map((row) => [row.day, Number(row.parts)]),
        );
      const day = (daysBack: number) => new Date(Date.now() - daysBack * 86_400_000).toISOString();
      const uuid = crypto.randomUUID();
      try {
        // three flushes into the days 3 and 2 back, one event of them sent twice (a retry)
        for (const batch of [
          [
            { event: "a", distinct_id: "u1", timestamp: day(3), uuid },
            { event: "a", distinct_id: "u2", timestamp: day(2) },
          ],
          [
            { event: "b", distinct_id: "u1", timestamp: day(3) },
            { event: "b", distinct_id: "u2", timestamp: day(2) },
          ],
          [{ event: "a", distinct_id: "u1", timestamp: day(3), uuid }],
        ]) {
          await storage.ingest((await captured(batch)).events);
        }
        const [three, two] = [day(3), day(2)].map((at) => at.slice(0, 10).replaceAll("-", ""));
        expect(await partsByDay()).toEqual({ [three!]: 3, [two!]: 2 });
        expect(await count(db, "events", "1")).toBe(5);
        const resolved = await count(db, "events_resolved", "1");
        expect(resolved).toBe(4);
        // once a second has passed, the next insert wakes the engine's merges (idle, it looks seldom)
        await Bun.sleep(1_500);
        await storage.ingest((await captured([{ event: "now", distinct_id: "u3" }])).events);
        const deadline = Date.now() + 60_000;
        while (Date.now() < deadline) {
          const parts = await partsByDay();
          if (parts[three!] === 1 && parts[two!] === 1) break;
          await Bun.sleep(250);
        }
        expect(await partsByDay()).toMatchObject({ [three!]: 1, [two!]: 1 });
        expect(await count(db, "events", `event != 'now'`)).toBe(4); // the copy is gone from the table itself
        expect(await count(db, "events_resolved", `event != 'now'`)).toBe(resolved);
      } finally {
        await storage.close();
        await db.command(`DROP DATABASE IF EXISTS \`${db.database}\``);
        await db.close();
      }
    },
  );
});

/** The engine's own count of file and directory fsyncs so far (process-wide). */
async function syncs(db: ClickHouse): Promise<{ files: number; directories: number }> {
  const rows = await db.rows<{ event: string; value: string | number }>(
    "SELECT event, value FROM system.events WHERE event IN ('FileSync', 'DirectorySync')",
  );
  const of = (event: string) => Number(rows.find((row) => row.event === event)?.value ?? 0);
  return { files: of("FileSync"), directories: of("DirectorySync") };
}

/** A database's schema, made and tuned as a service started with `FSYNC=fsync` does. */
async function tunedAt(database: string, fsync: Fsync): Promise<ClickHouse> {
  const db = await ClickHouse.connect(
    loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: database, FSYNC: fsync }).clickhouse,
  );
  await createSchema(db, () => {});
  await tuneEmbeddedEngine(db, engineAt(fsync));
  return db;
}

/**
 * `work` on a fresh database tuned at each of `levels` in turn (as by services restarted with another `FSYNC`),
 * dropped after.
 */
async function onTunedDatabase<T>(levels: [Fsync, ...Fsync[]], work: (db: ClickHouse) => Promise<T>): Promise<T> {
  const database = uniqueDatabase();
  for (const fsync of levels.slice(0, -1)) await (await tunedAt(database, fsync)).close();
  const db = await tunedAt(database, levels.at(-1)!);
  try {
    return await work(db);
  } finally {
    await db.command(`DROP DATABASE IF EXISTS \`${db.database}\``);
    await db.close();
  }
}

/** The fsyncs two inserts into `person_distinct_ids` cost, and then a merge of the two parts they made. */
function syncsOf(
  ...levels: [Fsync, ...Fsync[]]
): Promise<{ inserts: { files: number; directories: number }; merge: number }> {
  return onTunedDatabase(levels, async (db) => {
    const table = db.table("person_distinct_ids");
    await db.command(`SYSTEM STOP MERGES ${table}`);
    const before = await syncs(db);
    for (const version of [1, 2]) {
      await db.insert("person_distinct_ids", [
        { distinct_id: "d", person_id: crypto.randomUUID(), is_deleted: 0, version },
      ]);
    }
    const inserted = await syncs(db);
    await db.command(`SYSTEM START MERGES ${table}`);
    await db.command(`OPTIMIZE TABLE ${table} FINAL`);
    const merged = await syncs(db);
    return {
      inserts: { files: inserted.files - before.files, directories: inserted.directories - before.directories },
      merge: merged.files - inserted.files,
    };
  });
}

describe("FSYNC", () => {
  test.skipIf(!embedded)(
    "none syncs nothing, merges syncs each merged part, all also each insert's files and directory",
    async () => {
      expect(await syncsOf("none")).toEqual({ inserts: { files: 0, directories: 0 }, merge: 0 });

      const merges = await syncsOf("merges");
      expect(merges.inserts).toEqual({ files: 0, directories: 0 });
      expect(merges.merge).toBeGreaterThan(0);

      const all = await syncsOf("all");
      expect(all.inserts.files).toBeGreaterThan(0);
      expect(all.inserts.directories).toBeGreaterThan(0);
      expect(all.merge).toBeGreaterThan(0);
    },
  );

  test.skipIf(!embedded)("the identity facts, the source of every person, are synced as the rest", async () => {
    await onTunedDatabase(["all"], async (db) => {
      const before = await syncs(db);
      await db.command(`INSERT INTO ${db.table("identity_facts")} (distinct_id, kind, name) VALUES ('d', 'born', 'p')`);
      const after = await syncs(db);
      expect(after.files).toBeGreaterThan(before.files);
      expect(after.directories).toBeGreaterThan(before.directories);
    });
  });

  test.skipIf(!embedded)("a restart with another FSYNC level changes what existing tables sync", async () => {
    expect(await syncsOf("all", "none")).toEqual({ inserts: { files: 0, directories: 0 }, merge: 0 });
    expect((await syncsOf("none", "all")).inserts.directories).toBeGreaterThan(0);
  });
});
