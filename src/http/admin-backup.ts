import { isAbsolute, resolve } from "node:path";
import {
  BACKUP_PROGRESS_TYPE,
  type BackupAnswer,
  type BackupProgress,
  type BackupRequest,
  type BackupThroughService,
} from "../telemetry";

/** The path of the admin door that backs up. */
export const BACKUP_PATH = "/admin/backup";

/**
 * Most milliseconds between two progress lines while nothing changes (as while the engine lists the parts, when it
 * is asked every 10 ms): a report that changes nothing is sent only that often, one that does at once.
 */
const UNCHANGED_EVERY_MS = 1000;

/**
 * `POST /admin/backup` with `{"dest": "/abs/DIR", "base": "/abs/PREVIOUS", "bandwidth": BYTES_A_SECOND}` (base and
 * bandwidth optional): the answer of the
 * service (write/backup.ts), or 400 for a body that does not name absolute paths. Without a backup to call (a
 * service that cannot back up), 409.
 */
export async function backupThroughDoor(
  backup: BackupThroughService | undefined,
  body: string,
  onProgress?: (progress: BackupProgress) => void,
): Promise<BackupAnswer> {
  const asked = requestOf(body);
  if (typeof asked === "string") return { status: 400, error: asked };
  if (backup === undefined) return { status: 409, error: "This service does not back up through its admin door" };
  return backup(asked, onProgress);
}

/** The answer's last line, or the whole of it when no progress is followed. */
export function outcomeBody(outcome: BackupAnswer): object {
  return outcome.status === 200 ? { status: "ok", ...outcome.summary } : { status: "error", error: outcome.error };
}

/**
 * The backup followed as it goes (`Accept: BACKUP_PROGRESS_TYPE`): once the engine has begun, a 200 whose body is
 * a JSON line for each progress report, then the outcome's (`outcomeBody`). What is refused or fails before the
 * engine begins is answered by `whole`, as without progress. `settled` is told the outcome, however it came. A
 * client that goes away stops only the lines: the backup goes on, and its outcome is logged.
 */
export async function followedBackup(
  backup: BackupThroughService | undefined,
  body: string,
  whole: (outcome: BackupAnswer) => Response,
  settled: (outcome: BackupAnswer) => void,
): Promise<Response> {
  const encoder = new TextEncoder();
  let lines: ReadableStreamDefaultController<Uint8Array> | undefined;
  const stream = new ReadableStream<Uint8Array>({
    start: (controller) => {
      lines = controller;
    },
    cancel: () => {
      lines = undefined;
    },
  });
  const send = (line: object, last = false) => {
    try {
      lines?.enqueue(encoder.encode(`${JSON.stringify(line)}\n`));
      if (last) lines?.close();
    } catch {
      lines = undefined; // the client went away
    }
  };
  let begun: (value: undefined) => void = () => {};
  const started = new Promise<undefined>((resolve) => {
    begun = resolve;
  });
  let sentAt = Number.NEGATIVE_INFINITY;
  let sentState = "";
  const outcome = backupThroughDoor(backup, body, (progress) => {
    begun(undefined);
    const now = performance.now();
    const state = `${progress.bytes} ${progress.files} ${progress.ingested}`;
    if (state === sentState && now - sentAt < UNCHANGED_EVERY_MS) return;
    [sentAt, sentState] = [now, state];
    send({ progress });
  });
  void outcome.then(settled);
  const early = await Promise.race([outcome, started]);
  if (early !== undefined) return whole(early);
  void outcome.then((last) => send(outcomeBody(last), true));
  return new Response(stream, { status: 200, headers: { "content-type": BACKUP_PROGRESS_TYPE } });
}

/** Whether the request asks to follow the backup as it goes. */
export function followsProgress(request: Request): boolean {
  return (request.headers.get("accept") ?? "").includes(BACKUP_PROGRESS_TYPE);
}

/**
 * The destination and base a body names, as absolute paths, and the bandwidth; or the sentence saying what is
 * wrong with it.
 */
function requestOf(body: string): BackupRequest | string {
  let parsed: { dest?: unknown; base?: unknown; bandwidth?: unknown } | undefined;
  try {
    parsed = JSON.parse(body) as typeof parsed;
  } catch {
    parsed = undefined;
  }
  const { dest, base, bandwidth } = parsed ?? {};
  const absolute = (path: unknown) => typeof path === "string" && isAbsolute(path);
  if (!absolute(dest) || !(base === undefined || base === null || absolute(base))) {
    return 'The body must be a JSON object with "dest" (and "base", if any), absolute paths';
  }
  const limited = typeof bandwidth === "number" && Number.isFinite(bandwidth) && bandwidth >= 1;
  if (!(bandwidth === undefined || bandwidth === null || limited)) {
    return '"bandwidth" must be a number of bytes a second, at least 1';
  }
  return {
    dest: resolve(dest as string),
    base: typeof base === "string" ? resolve(base) : undefined,
    bandwidth: limited ? bandwidth : undefined,
  };
}
