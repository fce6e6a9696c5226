import { dirname } from "node:path";
import type { ClickHouseConfig } from "../config";
import { type BackupManifest, backupSummary, destinationProblem, intoDestination } from "../storage";
import type { BackupAnswer, BackupProgress, BackupRequest, BackupThroughService } from "../telemetry";

/**
 * `ingest backup` through the running service's admin door (docs/operations.md#backup-and-restore): checks the
 * destination as the command does on a stopped directory, and that it is directly in `BACKUP_DIR` (the one
 * directory the service's engine may write backups in: engine/open.ts), then has `make` (`Storage.backup`, which
 * holds flushes while the engine's statement runs) back up into it. One backup at a time.
 */
export function serviceBackup(
  clickhouse: ClickHouseConfig,
  backupDir: string | undefined,
  make: (
    request: BackupRequest,
    onProgress: (progress: BackupProgress) => void,
  ) => Promise<{ manifest: BackupManifest; paused: number }>,
): BackupThroughService {
  let running = false;
  return async (request: BackupRequest, onProgress = () => {}): Promise<BackupAnswer> => {
    const { dest, base } = request;
    if (clickhouse.kind === "server") {
      return {
        status: 409,
        error:
          "With CLICKHOUSE_URL the data is the server's: back it up with the server's own BACKUP statement " +
          "(ingest backup DEST, run without the admin door, prints it)",
      };
    }
    if (backupDir === undefined) {
      return {
        status: 409,
        error:
          "The service has no BACKUP_DIR: restart it with BACKUP_DIR set to a directory for backups (outside " +
          "DATA_DIR) to back up through its admin door, and give a DEST directly in it",
      };
    }
    if (dirname(dest) !== backupDir) {
      return {
        status: 400,
        error: `${dest} is not directly in BACKUP_DIR (${backupDir}): the service's engine writes backups nowhere else`,
      };
    }
    const { dataDir, database } = clickhouse;
    const problem = destinationProblem(dest, { base, dataDir, database });
    if (problem !== undefined) return { status: 400, error: problem };
    if (running) return { status: 409, error: "A backup is under way already: wait for it, then ask again" };
    running = true;
    try {
      const { manifest, paused } = await intoDestination(dest, () => make(request, onProgress));
      const summary = { ...backupSummary(dest, base, manifest), paused: Math.round(paused * 1000) / 1000 };
      return { status: 200, summary };
    } catch (error) {
      const cause = error instanceof Error ? error.message : String(error);
      return { status: 500, error: `The backup failed, and made no backup: ${cause}`, cause: error };
    } finally {
      running = false;
    }
  };
}
