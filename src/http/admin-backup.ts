import { isAbsolute, resolve } from "node:path";
import type { BackupAnswer, BackupRequest, BackupThroughService } from "../telemetry";

/** The path of the admin door that backs up. */
export const BACKUP_PATH = "/admin/backup";

/**
 * `POST /admin/backup` with `{"dest": "/abs/DIR", "base": "/abs/PREVIOUS"}` (base optional): the answer of the
 * service (write/backup.ts), or 400 for a body that does not name absolute paths. Without a backup to call (a
 * service that cannot back up), 409.
 */
export async function backupThroughDoor(backup: BackupThroughService | undefined, body: string): Promise<BackupAnswer> {
  const asked = requestOf(body);
  if (typeof asked === "string") return { status: 400, error: asked };
  if (backup === undefined) return { status: 409, error: "This service does not back up through its admin door" };
  return backup(asked);
}

/** The destination and base a body names, as absolute paths; or the sentence saying what is wrong with it. */
function requestOf(body: string): BackupRequest | string {
  let parsed: { dest?: unknown; base?: unknown } | undefined;
  try {
    parsed = JSON.parse(body) as typeof parsed;
  } catch {
    parsed = undefined;
  }
  const { dest, base } = parsed ?? {};
  const absolute = (path: unknown) => typeof path === "string" && isAbsolute(path);
  if (!absolute(dest) || !(base === undefined || base === null || absolute(base))) {
    return 'The body must be a JSON object with "dest" (and "base", if any), absolute paths';
  }
  return { dest: resolve(dest as string), base: typeof base === "string" ? resolve(base) : undefined };
}
