import { basename } from "node:path";
import type { ClickHouse } from "../clickhouse";
import { literal, quoteIdentifier } from "../sql";
import { syncTree, treeBytes } from "./files";
import { type BackupManifest, newManifest, readBackup, type TableStats, writeManifest } from "./manifest";

/**
 * How far a backup or restore has got: bytes of the database's parts copied, of about `totalBytes` (0: not known,
 * as for an incremental backup, which copies only what its base lacks).
 */
export interface CopyProgress {
  readonly bytes: number;
  readonly totalBytes: number;
  readonly files: number;
  readonly seconds: number;
  /**
   * Through a running service: the events it has stored since the engine took the parts (none until then, while
   * ingest is held): ingest going on during the copy. They are not in this backup; the next one has them.
   */
  readonly ingested?: number;
}

/** How often the engine is asked how a backup or restore is getting on. */
const POLL_MS = 200;

/** How often until it has counted its files: a running service's flushes wait until then (`backupDatabase`). */
const LISTING_POLL_MS = 10;

/** A backup or restore the engine reported failed, with the first line of its error (the rest is a stack). */
export class BackupFailed extends Error {
  override name = "BackupFailed";
}

/** Runs the copy with the database's writers held (a running service's flushes), and returns what it returns. */
export type Hold = <T>(copy: () => Promise<T>) => Promise<T>;

/** How `backupDatabase` backs up, beyond where to. */
export interface BackupOptions {
  /** A backup beside the new one: only what it lacks is copied. */
  readonly base?: string | undefined;
  /** Most bytes a second the engine reads for the copy (`max_backup_bandwidth`); none: as fast as it can. */
  readonly bandwidth?: number | undefined;
  readonly onProgress?: (progress: CopyProgress) => void;
  readonly hold?: Hold;
}

/**
 * Backs up every table and view of `db`'s database into the new directory `dest`, with the engine's own `BACKUP`
 * (`File` in the directory the engine may use, which must be `dest`'s parent: engine/open.ts `backupsDir`), then
 * syncs it and writes its manifest last (manifest.ts). With `base` (a backup beside `dest`), only the files the
 * base does not hold are copied: every data part is immutable, so a part the base has is named, not copied. With
 * `bandwidth`, the engine copies no faster (the parts are taken as quickly), leaving the disk to the writers.
 *
 * One statement for the whole database: the engine lists every table's parts before it copies any, so the copy is
 * of one moment, however long the copying takes. On a stopped data directory that is exactly its state. A running
 * service passes `hold`, which holds its flushes while the tables are measured and their parts listed, or the
 * tables may be listed either side of a flush (docs/operations.md#backup-and-restore): until `system.backups`
 * counts the backup's files, which the engine does once it holds every table's parts, before it copies any.
 * `dest`, `base` and the database are checked by the caller (`destinationProblem`).
 */
export async function backupDatabase(
  db: ClickHouse,
  dest: string,
  { base, bandwidth, onProgress = () => {}, hold = (copy) => copy() }: BackupOptions = {},
): Promise<BackupManifest> {
  const started = new Date();
  const baseBackup = base === undefined ? undefined : readBackup(base);
  if (typeof baseBackup === "string") throw new BackupFailed(baseBackup);
  const [engine] = await db.rows<{ version: string }>("SELECT version() AS version");
  const settings = [
    ...(base === undefined ? [] : [`base_backup = File(${literal(basename(base))})`]),
    ...(bandwidth === undefined ? [] : [`max_backup_bandwidth = ${Math.round(bandwidth)}`]),
  ];
  const on = settings.length === 0 ? "" : ` SETTINGS ${settings.join(", ")}`;
  let finished: Promise<string> = Promise.resolve("");
  const tables = await hold(async () => {
    const tables = await tableStats(db);
    const totalBytes = Object.values(tables).reduce((sum, table) => sum + table.bytes, 0);
    let listed = () => {};
    const parts = new Promise<void>((resolve) => {
      listed = resolve;
    });
    finished = untilDone(
      db,
      `BACKUP DATABASE ${quoteIdentifier(db.database)} TO File(${literal(basename(dest))})${on} ASYNC`,
      "CREATING_BACKUP",
      (row) => {
        // the engine counts the backup's files once it has taken every table's parts (and linked them): from then
        // on what is written is not in it, so the writers may go on while it copies
        if (row.num_files > 0 || row.status !== "CREATING_BACKUP") listed();
        // total_size is every file of the backup, its base's included: only a full backup copies all of them
        const total = base === undefined ? row.total_size || totalBytes : 0;
        onProgress({ bytes: row.uncompressed_size, totalBytes: total, files: row.num_files, seconds: since(started) });
      },
    );
    await Promise.race([parts, finished]);
    return tables;
  });
  const id = await finished;
  syncTree(dest);
  const manifest = newManifest({
    engine: engine?.version ?? "unknown",
    database: db.database,
    id,
    base: baseBackup === undefined ? null : { name: basename(baseBackup.dir), id: baseBackup.manifest.id },
    started: started.toISOString(),
    seconds: since(started),
    tables,
    bytes: treeBytes(dest),
  });
  writeManifest(dest, manifest);
  return manifest;
}

/**
 * Restores the backup `src` (and the chain of bases beside it, which the engine opens by their names) into `db`'s
 * database, with the engine's `RESTORE` (`File` in `src`'s parent, the directory the engine may use). With
 * `replace`, the database's tables and views are dropped first; otherwise the database must hold none. Returns the
 * tables as restored, once each has been read back whole against its checksums. The caller checks `src` (`backupChain`, `incompatibility`) and makes the copy durable.
 */
export async function restoreDatabase(
  db: ClickHouse,
  src: string,
  { replace = false, totalBytes = 0 }: { replace?: boolean; totalBytes?: number } = {},
  onProgress: (progress: CopyProgress) => void = () => {},
): Promise<Record<string, TableStats>> {
  const started = new Date();
  if (replace) await dropTables(db);
  await untilDone(
    db,
    `RESTORE DATABASE ${quoteIdentifier(db.database)} FROM File(${literal(basename(src))}) ASYNC`,
    "RESTORING",
    (row) =>
      onProgress({
        bytes: row.bytes_read,
        totalBytes: row.total_size || totalBytes,
        files: row.files_read,
        seconds: since(started),
      }),
  );
  const tables = await tableStats(db);
  await checkTables(db, Object.keys(tables));
  return tables;
}

/**
 * Reads every part of `tables` against its checksums (`CHECK TABLE`): the engine's RESTORE copies a damaged file
 * as it finds it (a byte flipped in a backup restored "successfully", and failed only when read), so a restore
 * is not done until the parts are read back. About a second a million events.
 */
async function checkTables(db: ClickHouse, tables: readonly string[]): Promise<void> {
  const damaged: string[] = [];
  for (const table of tables) {
    const [check] = await db.rows<{ result: number | string }>(
      `CHECK TABLE ${db.table(table)} SETTINGS check_query_single_value_result = 1`,
    );
    if (Number(check?.result) !== 1) damaged.push(table);
  }
  if (damaged.length > 0) {
    throw new BackupFailed(
      `the restored ${damaged.join(", ")} failed the engine's check of its parts: the backup is damaged`,
    );
  }
}

/** Drops every table and view of the database, the views first (a materialized view writes into a table). */
async function dropTables(db: ClickHouse): Promise<void> {
  const tables = await db.rows<{ name: string }>(
    `SELECT name FROM system.tables WHERE database = ${literal(db.database)} ORDER BY engine NOT LIKE '%View' , name`,
  );
  for (const { name } of tables) await db.command(`DROP TABLE IF EXISTS ${db.table(name)} SYNC`);
}

/** The rows and bytes of each table's active parts (a table with none: zero), by name. */
export async function tableStats(db: ClickHouse): Promise<Record<string, TableStats>> {
  const rows = await db.rows<{ name: string; rows: number | string; bytes: number | string }>(
    `SELECT t.name AS name, sum(p.rows) AS rows, sum(p.bytes_on_disk) AS bytes
     FROM system.tables AS t
     LEFT JOIN (SELECT table, rows, bytes_on_disk FROM system.parts WHERE database = ${literal(db.database)} AND active) AS p
       ON p.table = t.name
     WHERE t.database = ${literal(db.database)} AND t.engine LIKE '%MergeTree'
     GROUP BY t.name ORDER BY t.name`,
  );
  return Object.fromEntries(rows.map((row) => [row.name, { rows: Number(row.rows), bytes: Number(row.bytes) }]));
}

/**
 * A row of `system.backups`, as far as it is read here. A backup's `num_files` and `total_size` are counted once
 * its parts are taken, before it copies any; `uncompressed_size` then grows by each file written (the base's
 * files, not copied, not counted). A restore counts `files_read` and `bytes_read`.
 */
interface BackupRow {
  readonly status: string;
  readonly error: string;
  readonly num_files: number;
  readonly total_size: number;
  readonly uncompressed_size: number;
  readonly files_read: number;
  readonly bytes_read: number;
}

/**
 * Runs `statement` (an `ASYNC` backup or restore) and follows it in `system.backups` until its status is no longer
 * `running`, showing each row to `onRow`; returns its id, or throws `BackupFailed` with the engine's error.
 */
async function untilDone(
  db: ClickHouse,
  statement: string,
  running: string,
  onRow: (row: BackupRow) => void,
): Promise<string> {
  const [started] = await db.rows<{ id: string }>(statement);
  if (started === undefined) throw new BackupFailed("the engine did not start it");
  for (;;) {
    const [raw] = await db.rows<Record<keyof BackupRow, string | number>>(
      `SELECT status, error, num_files, total_size, uncompressed_size, files_read, bytes_read FROM system.backups WHERE id = ${literal(started.id)}`,
    );
    if (raw === undefined) throw new BackupFailed(`the engine lost track of ${started.id}`);
    const row: BackupRow = {
      status: String(raw.status),
      error: String(raw.error),
      num_files: Number(raw.num_files),
      total_size: Number(raw.total_size),
      uncompressed_size: Number(raw.uncompressed_size),
      files_read: Number(raw.files_read),
      bytes_read: Number(raw.bytes_read),
    };
    onRow(row);
    if (row.status.endsWith("FAILED")) throw new BackupFailed(firstLine(row.error));
    if (row.status !== running) return started.id;
    await Bun.sleep(row.num_files > 0 ? POLL_MS : LISTING_POLL_MS);
  }
}

/** The engine's error without its stack trace. */
function firstLine(error: string): string {
  return error.split(/, Stack trace|\n/)[0]!.trim();
}

function since(start: Date): number {
  return (Date.now() - start.getTime()) / 1000;
}

/**
 * With a ClickHouse server the data is the server's, and so are its backups: the statements that back up and
 * restore this service's database there, to the `backups` disk its configuration must allow
 * (`backups.allowed_disk`), as `name`, on `base` when given.
 */
export function serverBackupStatements(
  database: string,
  cluster: string | undefined,
  name: string,
  base?: string,
): { backup: string; restore: string } {
  const on = cluster === undefined ? "" : ` ON CLUSTER ${quoteIdentifier(cluster)}`;
  const disk = (backup: string) => `Disk('backups', ${literal(backup)})`;
  const settings = base === undefined ? "" : ` SETTINGS base_backup = ${disk(base)}`;
  return {
    backup: `BACKUP DATABASE ${quoteIdentifier(database)}${on} TO ${disk(name)}${settings}`,
    restore: `RESTORE DATABASE ${quoteIdentifier(database)}${on} FROM ${disk(name)}`,
  };
}
