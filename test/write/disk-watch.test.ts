import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/config";
import type { StorageUsage } from "../../src/storage";
import type { Disk } from "../../src/telemetry/observers";
import { DiskWatch } from "../../src/write/disk-watch";
import { captured } from "../helpers/captured";
import { clickhouseEnv, openStorage, uniqueDatabase } from "../helpers/service";

const GIB = 2 ** 30;
const OPTIONS = { percent: 10, intervalMs: 60_000, repeatMs: 3_600_000 };

/** A watch over a disk of 100 GiB whose free bytes the test sets, and what it told. */
function watched(percent = OPTIONS.percent) {
  const disk = { name: "default", freeBytes: 50 * GIB, totalBytes: 100 * GIB };
  const told: [string, number][] = [];
  let failing = false;
  const read = async (): Promise<StorageUsage> => {
    if (failing) throw new Error("the engine is busy");
    return { tables: {}, disk: { ...disk } };
  };
  const note = (kind: string) => (seen: Disk) => told.push([kind, seen.freeBytes / GIB]);
  const watch = new DiskWatch(
    read,
    { ...OPTIONS, percent },
    { diskLow: note("low"), diskRecovered: note("recovered") },
  );
  return { disk, told, watch, fail: (value: boolean) => (failing = value) };
}

describe("DiskWatch", () => {
  test("warns when free falls under the percent, again each repeat while it stays, and notes the recovery once", async () => {
    const { disk, told, watch } = watched();
    await watch.check(0);
    expect(told).toEqual([]); // half free
    disk.freeBytes = 9 * GIB;
    await watch.check(60_000);
    await watch.check(120_000); // within the hour: once
    expect(told).toEqual([["low", 9]]);
    disk.freeBytes = 8 * GIB;
    await watch.check(60_000 + OPTIONS.repeatMs);
    expect(told).toEqual([
      ["low", 9],
      ["low", 8],
    ]);
    disk.freeBytes = 30 * GIB;
    await watch.check(2 * OPTIONS.repeatMs);
    await watch.check(3 * OPTIONS.repeatMs);
    expect(told.at(-1)).toEqual(["recovered", 30]);
    expect(told).toHaveLength(3);
  });

  test("the boundary: exactly the percent free is not low", async () => {
    const { disk, told, watch } = watched();
    disk.freeBytes = 10 * GIB;
    await watch.check(0);
    disk.freeBytes = 10 * GIB - 1;
    await watch.check(1);
    expect(told.map(([kind]) => kind)).toEqual(["low"]);
  });

  test("a failed read is skipped; DISK_WARN_PERCENT=0 starts no watch", async () => {
    const { disk, told, watch, fail } = watched();
    disk.freeBytes = GIB;
    fail(true);
    await watch.check(0);
    expect(told).toEqual([]);
    fail(false);
    await watch.check(1);
    expect(told).toEqual([["low", 1]]);

    const off = watched(0);
    off.disk.freeBytes = 0;
    off.watch.start();
    await Bun.sleep(20);
    off.watch.stop();
    expect(off.told).toEqual([]);
  });
});

describe("Storage.usage on the engine", () => {
  test("each written table's parts and bytes, and the disk they are on", async () => {
    const storage = await openStorage(loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: uniqueDatabase() }));
    try {
      await storage.ingest(
        (await captured([{ event: "a", distinct_id: "u1", properties: { $set: { x: 1 } } }])).events,
      );
      const { tables, disk } = await storage.usage();
      for (const table of ["events", "persons", "person_distinct_ids", "identity_facts"]) {
        expect(tables[table]?.parts).toBeGreaterThanOrEqual(1);
        expect(tables[table]?.bytes).toBeGreaterThan(0);
      }
      expect(tables.sessions).toBeUndefined(); // no $session_id: no part
      // a server shows its disks; the query port, the server of `npm run test:server`, does not
      if (process.env.CLICKHOUSE_URL && disk === undefined) return;
      expect(disk?.totalBytes).toBeGreaterThan(0);
      expect(disk?.freeBytes).toBeGreaterThan(0);
      expect(disk!.freeBytes).toBeLessThanOrEqual(disk!.totalBytes);
    } finally {
      await storage.close();
    }
  });
});
