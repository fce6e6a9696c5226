import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { heldBy } from "../engine";
import { backupDatabase, backupSummary, ClickHouse, destinationProblem, intoDestination } from "../storage";
import { commandArgs, commandConfig, dataDirProblem, failed, onServer, refuse } from "./backup-common";
import { backupThroughDoor, doorOf } from "./backup-door";
import { copyProgressView, throttled } from "./progress";

const BACKUP_USAGE = `Usage: ingest backup [--url URL] [--data-dir DIR] [--base PREVIOUS] [--bandwidth MB] DEST

Copies every table of the service's database (CLICKHOUSE_DATABASE) into DEST, a new or empty directory, with the
engine's own BACKUP: one consistent copy, which ingest restore puts back. With --base, a backup in the same
directory as DEST, only what changed since it is copied (restoring DEST then needs PREVIOUS, and its own base,
beside it). DEST is a backup once its manifest, ingest-backup.json, is written, last.

With --bandwidth, the engine reads at most MB megabytes (millions of bytes) a second for the copy, leaving the
rest of the disk to ingest; taking the parts is not slowed.

It asks a running service's admin door: --url, else ADMIN_URL, else http://127.0.0.1:$ADMIN_PORT, with
ADMIN_TOKEN; the service must have BACKUP_DIR, and DEST must be directly in it. Ingest is held until the engine
has taken every table's parts, not while it copies. When no service answers there (or none is configured), it
backs up DATA_DIR (or --data-dir) itself, which works only while no service holds it.

Progress goes to standard error: a bar on a terminal (through the door, with the events ingested since the
backup's moment), else a JSON line every 5 seconds. The summary (tables, rows, bytes, seconds; through the door,
paused: the seconds ingest was held) is one JSON line on standard output. Exit status: 0 when the backup is made, 1 when it failed (DEST is removed), 2 for a
usage error or what cannot be backed up (nothing is changed). With CLICKHOUSE_URL it prints the server's own
BACKUP statement and exits 2.
`;

/** `ingest backup DEST`: returns the exit status. */
export async function backupCommand(args: readonly string[], env = process.env): Promise<number> {
  const parsed = commandArgs(
    "backup",
    args,
    {
      base: { type: "string" },
      "data-dir": { type: "string" },
      url: { type: "string" },
      bandwidth: { type: "string" },
    },
    BACKUP_USAGE,
  );
  if (typeof parsed === "number") return parsed;
  const dest = resolve(parsed.path);
  const base = typeof parsed.values.base === "string" ? resolve(parsed.values.base) : undefined;
  const bandwidth = bytesPerSecond(parsed.values.bandwidth);
  if (bandwidth === null) {
    return refuse(
      "backup",
      `--bandwidth takes megabytes a second, a number above 0 (was "${parsed.values.bandwidth}")`,
    );
  }
  const door = doorOf(typeof parsed.values.url === "string" ? parsed.values.url : undefined, env);
  if (door !== undefined) {
    const answered = await backupThroughDoor(door, { dest, base, bandwidth }, env.ADMIN_TOKEN ?? "");
    if (answered !== undefined) return answered;
  }
  const config = commandConfig(env, parsed.values["data-dir"]);
  if (typeof config === "number") return config;
  const server = onServer("backup", config, dest, base);
  if (server >= 0 || config.clickhouse.kind !== "embedded") return server;
  const { dataDir, database } = config.clickhouse;
  const held = heldBy(dataDir);
  if (held !== undefined) {
    return refuse(
      "backup",
      `${held}: back up through it instead: start it with ADMIN_PORT, ADMIN_TOKEN and BACKUP_DIR, and run this ` +
        "with the same ADMIN_PORT (or ADMIN_URL) and ADMIN_TOKEN, DEST directly in BACKUP_DIR",
    );
  }
  const incomplete = dataDirProblem(dataDir);
  if (incomplete !== undefined) return refuse("backup", incomplete);
  // the database's definition is there once a service or import has created it (engine/open.ts, schema/create.ts)
  if (!existsSync(join(dataDir, "metadata", `${database}.sql`))) {
    return refuse(
      "backup",
      `${dataDir} holds no database ${database} (CLICKHOUSE_DATABASE): there is nothing to back up`,
    );
  }
  const problem = destinationProblem(dest, { base, dataDir, database });
  if (problem !== undefined) return refuse("backup", problem);

  const progress = copyProgressView();
  let db: ClickHouse | undefined;
  try {
    const manifest = await intoDestination(dest, async () => {
      // BACKUP may write only in DEST's directory (engine/open.ts): File('DEST') is a name there, as is the base
      db = await ClickHouse.connect(config.clickhouse, { backupsDir: dirname(dest) });
      return backupDatabase(db, dest, {
        base,
        bandwidth,
        onProgress: throttled(progress.everyMs, (p) => progress.show(p)),
      });
    });
    progress.end();
    process.stdout.write(`${JSON.stringify({ ...backupSummary(dest, base, manifest), via: "directly" })}\n`);
    return 0;
  } catch (error) {
    progress.end();
    const cause = error instanceof Error ? error.message : String(error);
    return failed("backup", `failed, and made no backup: ${cause}`);
  } finally {
    await db?.close();
  }
}

/** `--bandwidth MB` in bytes a second: undefined when not given, null when not a number above 0. */
function bytesPerSecond(megabytes: string | boolean | undefined): number | undefined | null {
  if (megabytes === undefined) return undefined;
  const value = typeof megabytes === "string" && megabytes.trim() !== "" ? Number(megabytes) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? Math.max(1, Math.round(value * 1e6)) : null;
}
