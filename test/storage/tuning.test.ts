import { describe, expect, test } from "bun:test";
import { type Fsync, loadConfig } from "../../src/config";
import { ClickHouse } from "../../src/storage/clickhouse";
import { createSchema, TABLES } from "../../src/storage/schema";
import { embeddedTableSettings, tuneEmbeddedEngine } from "../../src/storage/tuning";
import { createTableQuery } from "../helpers/rows";
import { clickhouseEnv, openDb, openStorage, uniqueDatabase } from "../helpers/service";

const embedded = !process.env.CLICKHOUSE_URL;
const FSYNC_MERGES = { min_compressed_bytes_to_fsync_after_merge: 1 };

describe("table settings", () => {
  test("the storage tunes every embedded table when it opens, also tables made before; a server keeps its own", async () => {
    const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: uniqueDatabase() });
    const settings = embeddedTableSettings("merges");
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
      // the tables that take a part a flush wait for more parts before rewriting their largest: the small ones at
      // the engine's width, the two that grow with events 10 parts at a time
      for (const table of ["persons", "person_distinct_ids", "identity_facts"]) {
        expect(settings[table]).toMatchObject({ merge_selector_base: 20 });
        expect(await createTableQuery(db, table)).not.toContain("max_parts_to_merge_at_once");
      }
      for (const table of ["events", "sessions"]) {
        expect(settings[table]).toMatchObject({ merge_selector_base: 20, max_parts_to_merge_at_once: 10 });
      }
    } finally {
      await db.command(`DROP DATABASE IF EXISTS \`${db.database}\``);
      await db.close();
    }
  });
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
  await tuneEmbeddedEngine(db, fsync);
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
