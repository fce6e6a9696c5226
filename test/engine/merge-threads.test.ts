import { describe, expect, test } from "bun:test";
import { getPriority } from "node:os";
import { loadConfig } from "../../src/config";
import { MERGE_THREAD_NICE, threadsNamed } from "../../src/engine/merge-threads";
import { clickhouseEnv, openDb, openStorage, uniqueDatabase } from "../helpers/service";

describe("merge threads", () => {
  test("the embedded engine merges at the lowest CPU priority and nothing else changes priority; a server merges elsewhere", async () => {
    const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: uniqueDatabase() });
    const ownPriority = getPriority(process.pid);
    const db = await openDb(config.clickhouse.database);
    try {
      await (await openStorage(config)).close();
      const merging = threadsNamed("MergeMutate");
      if (db.backend === "server") {
        expect(merging).toEqual([]);
        return;
      }
      expect(merging.length).toBeGreaterThan(0);
      expect(merging.map((thread) => getPriority(thread))).toEqual(merging.map(() => MERGE_THREAD_NICE));
      expect(getPriority(process.pid)).toBe(ownPriority);
    } finally {
      await db.command(`DROP DATABASE IF EXISTS \`${db.database}\``);
      await db.close();
    }
  });
});
