/**
 * `ingest backup` through the admin door, as the door (http/admin-backup.ts) and the service that makes the
 * backup (write/backup.ts) both see it.
 */

/** What the door was asked: absolute paths, DEST and the base. */
export interface BackupRequest {
  readonly dest: string;
  readonly base: string | undefined;
}

/**
 * The outcome: 200 with the summary `ingest backup` prints and `paused`; 409 refused as things stand (no
 * `BACKUP_DIR`, a ClickHouse server, another backup under way); 400 a destination that cannot be used (nothing
 * made); 500 the backup failed (what it made of DEST is removed), with its cause for the log.
 */
export type BackupAnswer =
  | { readonly status: 200; readonly summary: Readonly<Record<string, unknown>> }
  | { readonly status: 400 | 409 | 500; readonly error: string; readonly cause?: unknown };

/** Makes a backup as the running service: what the admin door calls. */
export type BackupThroughService = (request: BackupRequest) => Promise<BackupAnswer>;
