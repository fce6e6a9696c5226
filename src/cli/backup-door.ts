import { type CopyProgress, MANIFEST } from "../storage";
import { BACKUP_PROGRESS_TYPE, type BackupRequest } from "../telemetry";
import { failed, refuse } from "./backup-common";
import { copyProgressView, throttled } from "./progress";

/** Where `ingest backup` asks a running service: an admin door, and whether it was asked for (then only it). */
export interface Door {
  readonly url: string;
  readonly explicit: boolean;
}

/** The door `--url`, ADMIN_URL or ADMIN_PORT names, as `ingest forget` finds it; none when none is set. */
export function doorOf(url: string | undefined, env: NodeJS.ProcessEnv): Door | undefined {
  const explicit = url ?? env.ADMIN_URL;
  if (explicit) return { url: explicit, explicit: true };
  return env.ADMIN_PORT ? { url: `http://127.0.0.1:${env.ADMIN_PORT}`, explicit: false } : undefined;
}

/**
 * Asks the service's admin door to back up as `request` says (`dest`, on `base`, both absolute; `bandwidth` in bytes
 * a second), follows its progress (as the
 * command does on a stopped directory, on standard error) and prints its summary. Undefined when nothing answers
 * at a door that was only assumed (ADMIN_PORT), so that the data directory is tried instead.
 */
export async function backupThroughDoor(
  door: Door,
  request: BackupRequest,
  token: string,
): Promise<number | undefined> {
  if (token === "") {
    return refuse(
      "backup",
      "ADMIN_TOKEN is not set: the admin door needs the service's token (see ingest backup --help)",
    );
  }
  let response: Response;
  try {
    response = await fetch(new URL("/admin/backup", door.url), {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: `${BACKUP_PROGRESS_TYPE}, application/json`,
      },
      body: JSON.stringify({ ...request, base: request.base ?? null }),
      // the answer is silent while ingest's flushes under way finish (a forget's, minutes) and while the backup is
      // synced to disk: the service's door never cuts it either
      timeout: false,
    });
  } catch (error) {
    if (!door.explicit) return undefined;
    return failed("backup", `cannot reach the admin door at ${door.url}: ${(error as Error).message}`);
  }
  if (response.ok && response.headers.get("content-type")?.startsWith(BACKUP_PROGRESS_TYPE) === true) {
    return followed(response, door);
  }
  const body = (await response.json().catch(() => ({}))) as { status?: unknown; error?: string };
  if (response.ok) {
    const { status: _status, ...summary } = body;
    process.stdout.write(`${JSON.stringify({ ...summary, via: "service" })}\n`);
    return 0;
  }
  if (response.status === 401) return refuse("backup", `the service at ${door.url} refused ADMIN_TOKEN`);
  const sentence = (body.error ?? `the admin door answered ${response.status}`).replace(/\.$/, "");
  // refused with nothing made: no BACKUP_DIR, a destination it cannot use, a backup under way
  if (response.status < 500) return refuse("backup", sentence);
  return failed("backup", sentence);
}

/** A line of the door's answer followed as it goes: progress, or the outcome (http/admin-backup.ts). */
interface DoorLine {
  readonly progress?: CopyProgress;
  readonly status?: "ok" | "error";
  readonly error?: string;
}

/**
 * The door's lines as they come: progress shown, then the outcome, its summary printed (exit 0) or its error
 * (exit 1). An answer that ends without its outcome (the service stopped, the connection lost) is a failure too:
 * whether the backup was made, the service's log says.
 */
async function followed(response: Response, door: Door): Promise<number> {
  const view = copyProgressView();
  const show = throttled(view.everyMs, (progress: CopyProgress) => view.show(progress));
  let outcome: DoorLine | undefined;
  try {
    for await (const line of jsonLines(response.body!)) {
      const read = line as DoorLine;
      if (read.progress !== undefined) show(read.progress);
      else outcome = read;
    }
  } catch {
    outcome = undefined;
  }
  view.end();
  if (outcome?.status === undefined) {
    return failed(
      "backup",
      `the answer from ${door.url} ended before the backup did (did the service stop?): its log says whether the ` +
        `backup was made; DEST is one only once it holds ${MANIFEST}`,
    );
  }
  if (outcome.status === "error") return failed("backup", String(outcome.error).replace(/\.$/, ""));
  const { status: _status, ...summary } = outcome;
  process.stdout.write(`${JSON.stringify({ ...summary, via: "service" })}\n`);
  return 0;
}

/** Each whole line of `body`, parsed as JSON, as it arrives. */
async function* jsonLines(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of body) {
    text += decoder.decode(chunk, { stream: true });
    let end = text.indexOf("\n");
    while (end >= 0) {
      const line = text.slice(0, end).trim();
      text = text.slice(end + 1);
      if (line !== "") yield JSON.parse(line);
      end = text.indexOf("\n");
    }
  }
}
