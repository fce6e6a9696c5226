import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { getPriority } from "node:os";
import { MERGE_THREAD_NICE } from "../../src/storage/merge-threads";
import { createSchema } from "../../src/storage/schema";
import { openDb, uniqueDatabase } from "../helpers/service";

/** This process's threads: id and name. */
function threads(): { id: number; name: string }[] {
  return readdirSync("/proc/self/task").flatMap((task) => {
    try {
      return [{ id: Number(task), name: readFileSync(`/proc/self/task/${task}/comm`, "utf8").trim() }];
    } catch {
      return []; // ended while we looked
    }
  });
}

describe("merge threads", () => {
  test("the embedded engine merges at the lowest CPU priority and nothing else changes priority; a server merges elsewhere", async () => {
    const db = await openDb(uniqueDatabase());
    const ownPriority = getPriority(process.pid);
    try {
      await createSchema(db, () => {});
      const merging = threads().filter((thread) => thread.name.startsWith("MergeMutate"));
      if (db.backend === "server") {
        expect(merging).toEqual([]);
        return;
      }
      expect(merging.length).toBeGreaterThan(0);
      expect(merging.map((thread) => getPriority(thread.id))).toEqual(merging.map(() => MERGE_THREAD_NICE));
      expect(getPriority(process.pid)).toBe(ownPriority);
    } finally {
      await db.command(`DROP DATABASE IF EXISTS \`${db.database}\``);
      await db.close();
    }
  });
});
