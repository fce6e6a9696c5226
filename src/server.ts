import type { Server } from "bun";
import { captureBatch } from "./capture";
import type { Config } from "./config";
import { ALLOWED_METHODS, allowedOrigin, preflight, shareWith } from "./cors";
import { asIngestError, fail, type IngestError } from "./errors";
import type { EventSink } from "./event";

/** What a request is handled with. */
export interface App {
  readonly config: Config;
  readonly sink: EventSink;
  /** Told of every failure answered, with its code and cause (logs, metrics, tests). */
  readonly onFailure?: (failure: IngestError, request: Request | undefined) => void;
}

/**
 * Starts the HTTP server. Bun's own body limit is lifted out of the way: over it, Bun would answer with an
 * empty 413, and the spec wants an Error object, so `MAX_BATCH_BYTES` is enforced while reading the body.
 * Development mode stays off and `error` answers anything that escapes `handle`, so Bun's HTML error page,
 * with paths and source lines, is never sent.
 */
export function serve(app: App): Server<undefined> {
  return Bun.serve({
    hostname: app.config.host,
    port: app.config.port,
    development: false,
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    fetch: (request) => handle(request, app),
    error: (error) => failureResponse(fail.internal(error), app, undefined),
  });
}

// Without a Host header (HTTP/1.0), or with one that is no host, Bun hands over a relative URL.
const BASE_URL = "http://localhost";

/** Routes by hand, and is the one place a failure becomes a response; responses to an allowed origin are shared. */
export async function handle(request: Request, app: App): Promise<Response> {
  const response = await route(request, app);
  const origin = allowedOrigin(request, app.config);
  return origin === undefined ? response : shareWith(response, origin);
}

async function route(request: Request, app: App): Promise<Response> {
  try {
    const url = URL.parse(request.url, BASE_URL);
    if (url === null) throw fail.badRequest();
    switch (url.pathname) {
      case "/batch":
      case "/batch/": {
        if (request.method === "OPTIONS") return preflight(request, app.config);
        if (request.method !== "POST") throw fail.methodNotAllowed(ALLOWED_METHODS);
        const { ingested, dropped } = await captureBatch(request, url, app.config, app.sink);
        return Response.json({ status: "ok", ingested, dropped });
      }
      case "/health":
        if (request.method !== "GET" && request.method !== "HEAD") throw fail.methodNotAllowed("GET, HEAD");
        return Response.json({ ok: true });
      default:
        throw fail.notFound();
    }
  } catch (error) {
    return failureResponse(asIngestError(error), app, request);
  }
}

/** The one place a failure becomes a response: the Error object, the failure's status and headers. */
function failureResponse(failure: IngestError, app: App, request: Request | undefined): Response {
  (app.onFailure ?? logInternal)(failure, request);
  return Response.json(
    { status: "error", error: failure.message },
    { status: failure.status, headers: failure.headers },
  );
}

function logInternal(failure: IngestError, request: Request | undefined): void {
  if (failure.code !== "internal") return;
  const path = request === undefined ? "" : URL.parse(request.url, BASE_URL)?.pathname;
  console.error(`${request?.method ?? "request"} ${path} failed:`, failure.cause);
}
