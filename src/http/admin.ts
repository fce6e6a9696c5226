import { timingSafeEqual } from "node:crypto";
import type { Server } from "bun";
import { type Config, OperatorError } from "../config";
import {
  type AdminObserver,
  type BackupAnswer,
  type BackupThroughService,
  type Forget,
  unknownSentence,
} from "../telemetry";
import { BACKUP_PATH, backupThroughDoor, followedBackup, followsProgress, outcomeBody } from "./admin-backup";
import { requestUrl } from "./body";

/** What the admin door serves: `ingest forget` and `ingest backup`, for the holder of the token. */
export interface AdminApp {
  /** `ADMIN_TOKEN`: sent as `Authorization: Bearer …`. */
  readonly token: string;
  readonly forget: Forget;
  /** `ingest backup` as the service makes it (write/backup.ts). */
  readonly backup?: BackupThroughService;
  readonly observer?: AdminObserver;
}

/** The path that forgets (and BACKUP_PATH, admin-backup.ts). */
export const FORGET_PATH = "/admin/forget";

/** Most distinct IDs one request names: each forget pauses ingest, so a larger list is several requests. */
export const MAX_FORGET_IDS = 10_000;

const PATHS = new Set([FORGET_PATH, BACKUP_PATH]);

/** Most body bytes: `MAX_FORGET_IDS` IDs of the 200 characters the columns keep, quoted. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * Starts the admin door on `ADMIN_PORT`, when it is set: on 127.0.0.1 whatever `HOST` says, so that only someone on
 * this machine (or in this container) reaches it, and only with the token. A forget may run for minutes on a large
 * database, so connections are never cut for being idle.
 */
export function serveAdmin(config: Config, app: AdminApp): Server<undefined> | undefined {
  if (config.adminPort === undefined) return undefined;
  return Bun.serve({
    hostname: "127.0.0.1",
    port: config.adminPort,
    development: false,
    idleTimeout: 0,
    maxRequestBodySize: MAX_BODY_BYTES,
    fetch: (request) => handleAdmin(request, app),
    error: () => answer(500, { status: "error", error: "Internal server error" }),
  });
}

/**
 * `POST /admin/forget` with `{"distinct_ids": [...]}` and the bearer token: 200 with what was removed; 401 without
 * the token; 400 for a body that is not such a list; 404 naming the IDs no person has (nothing is changed); 500
 * when the forget failed part-way (running it again finishes it). `POST /admin/backup`: admin-backup.ts. Other
 * paths 404, other methods 405.
 */
export async function handleAdmin(request: Request, app: AdminApp): Promise<Response> {
  const path = requestUrl(request)?.pathname ?? "";
  if (!PATHS.has(path)) return refused(app, 404, "Not found");
  if (request.method !== "POST") {
    return refused(app, 405, "Method not allowed; use POST", { Allow: "POST" });
  }
  if (!hasToken(request, app.token)) {
    return refused(app, 401, "A valid ADMIN_TOKEN is required", { "WWW-Authenticate": "Bearer" });
  }
  if (path === BACKUP_PATH) return backup(app, request);
  const ids = distinctIdsOf(await request.text().catch(() => ""));
  if (typeof ids === "string") return refused(app, 400, ids);
  try {
    const outcome = await app.forget(ids);
    if ("unknown" in outcome) {
      app.observer?.refused(404, "no person has one of the IDs");
      return answer(404, { status: "error", error: unknownSentence(outcome.unknown), unknown: outcome.unknown });
    }
    app.observer?.forgotten(ids, outcome.forgotten);
    return answer(200, { status: "ok", ...outcome.forgotten });
  } catch (error) {
    app.observer?.failed(error);
    // an operator's error says what to do; any other may quote rows, so it stays in the log
    const sentence = error instanceof OperatorError ? error.message : "The forget failed part-way; run it again.";
    return answer(500, { status: "error", error: sentence });
  }
}

/** `POST /admin/backup` (admin-backup.ts), answered at the end or followed as it goes; its outcome logged. */
async function backup(app: AdminApp, request: Request): Promise<Response> {
  const body = await request.text().catch(() => "");
  const whole = (outcome: BackupAnswer) => answer(outcome.status, outcomeBody(outcome));
  const logged = (outcome: BackupAnswer) => {
    if (outcome.status === 200) app.observer?.backedUp(outcome.summary);
    else if (outcome.status === 500) app.observer?.backupFailed(outcome.cause);
    else app.observer?.refused(outcome.status, outcome.error);
  };
  if (followsProgress(request)) return followedBackup(app.backup, body, whole, logged);
  const outcome = await backupThroughDoor(app.backup, body);
  logged(outcome);
  return whole(outcome);
}

/**
 * The distinct IDs a body names: a JSON object whose `distinct_ids` is a non-empty list of non-empty strings, at
 * most `MAX_FORGET_IDS`; or the sentence saying what is wrong with it.
 */
function distinctIdsOf(body: string): string[] | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const ids = (parsed as { distinct_ids?: unknown } | null | undefined)?.distinct_ids;
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === "string" && id !== "")) {
    return 'The body must be a JSON object with "distinct_ids", a non-empty list of non-empty strings';
  }
  if (ids.length > MAX_FORGET_IDS) return `At most ${MAX_FORGET_IDS} distinct IDs a request (was ${ids.length})`;
  return [...new Set(ids as string[])];
}

/** Whether the request carries the token, compared in constant time (as digests of equal length). */
function hasToken(request: Request, token: string): boolean {
  const [scheme, given] = (request.headers.get("authorization") ?? "").trim().split(/\s+/, 2);
  if (scheme?.toLowerCase() !== "bearer" || given === undefined) return false;
  const digest = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest();
  return timingSafeEqual(digest(given), digest(token));
}

function refused(app: AdminApp, status: number, error: string, headers: Record<string, string> = {}): Response {
  app.observer?.refused(status, error);
  return answer(status, { status: "error", error }, headers);
}

function answer(status: number, body: object, headers: Record<string, string> = {}): Response {
  return Response.json(body, { status, headers });
}
