/**
 * `ingest backup` through the admin door, as the door (http/admin-backup.ts) and the service that makes the
 * backup (write/backup.ts) both see it.
 */

/**
 * What a client of the door sends as `Accept` to follow the backup as it goes: the answer is then a line of JSON
 * for each report of the engine (`{"progress": {...}}`), and last the outcome (`{"status": "ok", ...summary}`, or
 * `{"status": "error", "error": ...}`) once a backup has begun; a refusal is answered as without it.
 */
export const BACKUP_PROGRESS_TYPE = "application/x-ndjson";

/** What the door was asked: absolute paths, DEST and the base; and how fast the engine may read (bytes a second). */
export interface BackupRequest {
  readonly dest: string;
  readonly base: string | undefined;
  readonly bandwidth?: number | undefined;
}

/**
 * The outcome: 200 with the summary `ingest backup` prints and `paused`; 409 refused as things stand (no
 * `BACKUP_DIR`, a ClickHouse server, another backup under way); 400 a destination that cannot be used (nothing
 * made); 500 the backup failed (what it made of DEST is removed), with its cause for the log.
 */
export type BackupAnswer =
  | { readonly status: 200; readonly summary: Readonly<Record<string, unknown>> }
  | { readonly status: 400 | 409 | 500; readonly error: string; readonly cause?: unknown };

/**
 * How a backup under way is getting on, as the engine reports it (storage/backup/sql.ts `CopyProgress`): bytes
 * copied of about `totalBytes` (0: not known), files, seconds, and the events ingested since its moment.
 */
export interface BackupProgress {
  readonly bytes: number;
  readonly totalBytes: number;
  readonly files: number;
  readonly seconds: number;
  readonly ingested?: number;
}

/**
 * Makes a backup as the running service: what the admin door calls. `onProgress` is first called once the
 * request has passed every check and the engine's statement has started (a refusal never calls it), then as the
 * engine copies.
 */
export type BackupThroughService = (
  request: BackupRequest,
  onProgress?: (progress: BackupProgress) => void,
) => Promise<BackupAnswer>;
