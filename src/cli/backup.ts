import { existsSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { backupDatabase, ClickHouse, type CopyProgress, destinationProblem } from "../storage";
import { commandArgs, commandConfig, dataDirProblem, failed, onServer, refuse } from "./backup-common";
import { copyProgressView } from "./progress";

const BACKUP_USAGE = `Usage: ingest backup [--data-dir DIR] [--base PREVIOUS] DEST

Copies every table of the service's database (CLICKHOUSE_DATABASE) in DATA_DIR (or --data-dir), which no running
service may hold, into DEST, a new or empty directory, with the engine's own BACKUP: one consistent copy, which
ingest restore puts back. With --base, a backup in the same directory as DEST, only what changed since it is
copied (restoring DEST then needs PREVIOUS, and its own base, beside it). DEST is a backup once its manifest,
ingest-backup.json, is written, last.

Progress goes to standard error; the summary (tables, rows, bytes, seconds) is one JSON line on standard output.
Exit status: 0 when the backup is made, 1 when it failed (DEST is removed), 2 for a usage error or what cannot
be backed up (nothing is changed). With CLICKHOUSE_URL it prints the server's own BACKUP statement and exits 2.
`;

/** `ingest backup DEST`: returns the exit status. */
export async function backupCommand(args: readonly string[], env = process.env): Promise<number> {
  const parsed = commandArgs(
    "backup",
    args,
    { base: { type: "string" }, "data-dir": { type: "string" } },
    BACKUP_USAGE,
  );
  if (typeof parsed === "number") return parsed;
  const dest = resolve(parsed.path);
  const base = typeof parsed.values.base === "string" ? resolve(parsed.values.base) : undefined;
  const config = commandConfig(env, parsed.values["data-dir"]);
  if (typeof config === "number") return config;
  const server = onServer("backup", config, dest, base);
  if (server >= 0 || config.clickhouse.kind !== "embedded") return server;
  const { dataDir, database } = config.clickhouse;
  const held = dataDirProblem(dataDir);
  if (held !== undefined) return refuse("backup", held);
  // the database's definition is there once a service or import has created it (engine/open.ts, schema/create.ts)
  if (!existsSync(join(dataDir, "metadata", `${database}.sql`))) {
    return refuse(
      "backup",
      `${dataDir} holds no database ${database} (CLICKHOUSE_DATABASE): there is nothing to back up`,
    );
  }
  const problem = destinationProblem(dest, { base, dataDir, database });
  if (problem !== undefined) return refuse("backup", problem);

  const existed = existsSync(dest); // and empty (destinationProblem)
  const progress = copyProgressView();
  let db: ClickHouse | undefined;
  try {
    // BACKUP may write only in DEST's directory (engine/open.ts): File('DEST') is a name there, as is the base
    db = await ClickHouse.connect(config.clickhouse, { backupsDir: dirname(dest) });
    const manifest = await backupDatabase(
      db,
      dest,
      base,
      throttled(progress.everyMs, (p) => progress.show(p)),
    );
    progress.end();
    const tables = manifest.tables;
    process.stdout.write(
      `${JSON.stringify({
        backup: dest,
        database,
        base: base ?? null,
        id: manifest.id,
        tables,
        rows: Object.values(tables).reduce((sum, table) => sum + table.rows, 0),
        bytes: manifest.bytes,
        seconds: Math.round(manifest.seconds * 1000) / 1000,
      })}\n`,
    );
    return 0;
  } catch (error) {
    progress.end();
    // what this run made, and nothing else: DEST was missing or empty (destinationProblem)
    rmSync(dest, { recursive: true, force: true });
    if (existed) mkdirSync(dest);
    const cause = error instanceof Error ? error.message : String(error);
    return failed("backup", `failed, and made no backup: ${cause}`);
  } finally {
    await db?.close();
  }
}

/** `show`, called at most every `everyMs`, the first time `everyMs` after the start: a quick copy shows none. */
export function throttled(everyMs: number, show: (progress: CopyProgress) => void): (progress: CopyProgress) => void {
  let last = performance.now();
  return (progress) => {
    const now = performance.now();
    if (now - last < everyMs) return;
    last = now;
    show(progress);
  };
}
