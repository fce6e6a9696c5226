import { expect, test } from "bun:test";
import { type Fsync, loadConfig } from "../../src/config";
import { ClickHouse } from "../../src/storage/clickhouse";
import { createSchema } from "../../src/storage/schema";
import { clickhouseEnv, uniqueDatabase } from "../helpers/service";

const embedded = !process.env.CLICKHOUSE_URL;

/** The engine's own count of file and directory fsyncs so far (process-wide). */
async function syncs(db: ClickHouse): Promise<{ files: number; directories: number }> {
  const rows = await db.rows<{ event: string; value: string | number }>(
    "SELECT event, value FROM system.events WHERE event IN ('FileSync', 'DirectorySync')",
  );
  const of = (event: string) => Number(rows.find((row) => row.event === event)?.value ?? 0);
  return { files: of("FileSync"), directories: of("DirectorySync") };
}

/**
 * The fsyncs two inserts into `person_distinct_ids` cost, and then a merge of the two parts they made, on a
 * database whose schema was created at each of `levels` in turn (as by services restarted with another `FSYNC`).
 */
async function syncsOf(
  ...levels: [Fsync, ...Fsync[]]
): Promise<{ inserts: { files: number; directories: number }; merge: number }> {
  const database = uniqueDatabase();
  const open = (fsync: Fsync) =>
    ClickHouse.connect(loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: database, FSYNC: fsync }).clickhouse);
  for (const fsync of levels.slice(0, -1)) {
    const earlier = await open(fsync);
    await createSchema(earlier, () => {});
    await earlier.close();
  }
  const db = await open(levels.at(-1)!);
  const table = db.table("person_distinct_ids");
  try {
    await createSchema(db, () => {});
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
  } finally {
    await db.command(`DROP DATABASE IF EXISTS \`${db.database}\``);
    await db.close();
  }
}

test.skipIf(!embedded)(
  "FSYNC: none syncs nothing, merges syncs each merged part, all also each insert's files and directory",
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

test.skipIf(!embedded)("a restart with another FSYNC level changes what existing tables sync", async () => {
  expect(await syncsOf("all", "none")).toEqual({ inserts: { files: 0, directories: 0 }, merge: 0 });
  expect((await syncsOf("none", "all")).inserts.directories).toBeGreaterThan(0);
});
