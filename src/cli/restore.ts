import { statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { incompleteRestore, markRestoring, unmarkRestoring } from "../engine";
import {
  backupChain,
  ClickHouse,
  incompatibility,
  isEmptyOrMissing,
  isWithin,
  restoreDatabase,
  syncTree,
} from "../storage";
import { commandArgs, commandConfig, dataDirProblem, failed, onServer, refuse } from "./backup-common";
import { copyProgressView, throttled } from "./progress";

const RESTORE_USAGE = `Usage: ingest restore [--data-dir DIR] [--force] SRC

Restores the backup SRC (made by ingest backup; an incremental one with its bases beside it) into DATA_DIR (or
--data-dir), which must be empty or missing and held by no running service. A service started on it then serves
the data as it was backed up. DATA_DIR is marked incomplete (the file restore-incomplete) until every restored
file is on disk: a restore that is stopped leaves it refused, by the service and by a restore without --force.

  --force   restore into a DATA_DIR that is not empty: the tables of the service's database in it are dropped
            and replaced (other databases are left alone); also what finishes an incomplete restore

Progress goes to standard error; the summary (tables, rows, bytes, seconds) is one JSON line on standard output.
Exit status: 0 when restored, 1 when the restore failed (DATA_DIR is left marked incomplete), 2 for a usage
error or what cannot be restored (nothing is changed). With CLICKHOUSE_URL it prints the server's own RESTORE
statement and exits 2.
`;

/** `ingest restore SRC`: returns the exit status. */
export async function restoreCommand(args: readonly string[], env = process.env): Promise<number> {
  const parsed = commandArgs(
    "restore",
    args,
    { force: { type: "boolean" }, "data-dir": { type: "string" } },
    RESTORE_USAGE,
  );
  if (typeof parsed === "number") return parsed;
  const src = resolve(parsed.path);
  const force = parsed.values.force === true;
  const config = commandConfig(env, parsed.values["data-dir"]);
  if (typeof config === "number") return config;
  const server = onServer("restore", config, src);
  if (server >= 0 || config.clickhouse.kind !== "embedded") return server;
  const { dataDir, database } = config.clickhouse;

  const chain = backupChain(src);
  if (typeof chain === "string") return refuse("restore", chain);
  const problem = incompatibility(chain[0]!.manifest, src, database) ?? targetProblem(dataDir, src, database, force);
  if (problem !== undefined) return refuse("restore", problem);

  const started = performance.now();
  // first, before the engine writes anything: until it is removed, nothing but a restore opens the directory
  markRestoring(dataDir, JSON.stringify({ restoring: src, started: new Date().toISOString() }));
  const progress = copyProgressView();
  let db: ClickHouse | undefined;
  try {
    // RESTORE may read only in SRC's directory, where it finds SRC and its bases by their names (engine/open.ts)
    db = await ClickHouse.connect(config.clickhouse, { backupsDir: dirname(src), restoring: true });
    const tables = await restoreDatabase(
      db,
      src,
      { replace: force },
      throttled(progress.everyMs, (p) => progress.show(p)),
    );
    progress.end();
    await db.close();
    db = undefined;
    syncTree(dataDir);
    unmarkRestoring(dataDir);
    const stats = Object.values(tables);
    process.stdout.write(
      `${JSON.stringify({
        restored: src,
        chain: chain.map((backup) => backup.dir),
        database,
        dataDir,
        tables,
        rows: stats.reduce((sum, table) => sum + table.rows, 0),
        bytes: stats.reduce((sum, table) => sum + table.bytes, 0),
        seconds: Math.round(performance.now() - started) / 1000,
      })}\n`,
    );
    return 0;
  } catch (error) {
    progress.end();
    const cause = error instanceof Error ? error.message : String(error);
    return failed(
      "restore",
      `failed: ${cause}\n${dataDir} is left marked incomplete; run ingest restore into it again with --force.`,
    );
  } finally {
    await db?.close();
  }
}

/**
 * Why the backup cannot be restored into `dataDir`, if it cannot: a running service holds it, it is not a
 * directory, the backup is inside it (or it inside the backup), or, without `force`, it holds something.
 */
function targetProblem(dataDir: string, src: string, database: string, force: boolean): string | undefined {
  const held = dataDirProblem(dataDir, true);
  if (held !== undefined) return held;
  if (isWithin(src, dataDir) || isWithin(dataDir, src)) {
    return `${src} and the data directory ${dataDir} must not be inside one another`;
  }
  if (statSync(dataDir, { throwIfNoEntry: false })?.isDirectory() === false) return `${dataDir} is not a directory`;
  return force || isEmptyOrMissing(dataDir) ? undefined : notEmpty(dataDir, database);
}

/** The refusal of a data directory that holds something: what is there, and how to restore over it anyway. */
function notEmpty(dataDir: string, database: string): string {
  const incomplete = incompleteRestore(dataDir);
  if (incomplete !== undefined) return incomplete.replace(/\.$/, "");
  return (
    `${dataDir} is not empty: restore into an empty or new directory, or pass --force to replace the tables of ` +
    `${database} in it`
  );
}
