import type { ClickHouse } from "./clickhouse";
import { literal } from "./sql";

/** What the service's tables hold on disk, and the room left where they are kept. */
export interface StorageUsage {
  /** Each table with data parts: active parts (merges keep it low) and their bytes on disk. */
  readonly tables: Readonly<Record<string, { readonly parts: number; readonly bytes: number }>>;
  /**
   * The fullest disk the tables are on (the engine's `default` disk when they have no part yet): the data
   * directory's file system, embedded. Absent when the engine lists no such disk, or does not show them.
   */
  readonly disk?: { readonly name: string; readonly freeBytes: number; readonly totalBytes: number };
}

/**
 * Reads the usage from the engine's own tables, so the same SQL serves the embedded engine and a server. On a
 * cluster it is the node the service is connected to: the others report their own.
 */
export async function readUsage(db: ClickHouse): Promise<StorageUsage> {
  const database = literal(db.database);
  const parts = await db.rows<{ table: string; parts: string; bytes: string; disks: string[] }>(
    `SELECT table, count() AS parts, sum(bytes_on_disk) AS bytes, groupUniqArray(disk_name) AS disks
     FROM system.parts WHERE active AND database = ${database} GROUP BY table`,
  );
  const used = [...new Set(parts.flatMap((row) => row.disks))];
  // a server may keep its disks from this user (the query port of another instance does): no disk, then
  const disks = await db
    .rows<{ name: string; free: string; total: string }>(
      `SELECT name, free_space AS free, total_space AS total FROM system.disks
       WHERE name IN (${(used.length > 0 ? used : ["default"]).map(literal).join(", ")}) AND total_space > 0
       ORDER BY free_space / total_space LIMIT 1`,
    )
    .catch(() => []);
  const disk = disks[0];
  return {
    tables: Object.fromEntries(parts.map((row) => [row.table, { parts: Number(row.parts), bytes: Number(row.bytes) }])),
    ...(disk && { disk: { name: disk.name, freeBytes: Number(disk.free), totalBytes: Number(disk.total) } }),
  };
}

/**
 * Whether the disk is low: free under `percent` of it. Ingest stops when the engine cannot reserve room for a
 * new part (every `POST /batch/` then fails with a 500, which SDKs retry until space is freed), so the warning
 * comes well before.
 */
export function isDiskLow(disk: NonNullable<StorageUsage["disk"]>, percent: number): boolean {
  return percent > 0 && disk.freeBytes < (disk.totalBytes * percent) / 100;
}
