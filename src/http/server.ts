import type { Server } from "bun";
import type { GeoIp, PendingBytes } from "../capture";
import type { Config } from "../config";
import { asIngestError, type EventSink, fail, type IngestError } from "../contract";
import type { Answer, Handled, RequestObserver, Route } from "../telemetry";
import { batch } from "./batch";
import { requestUrl } from "./body";
import { ALLOWED_METHODS, allowedOrigin, preflight, shareWith } from "./cors";

/** What a request is handled with. */
export interface App {
  readonly config: Config;
  readonly sink: EventSink;
  /** The body bytes in flight, shared by every request of the server (`MAX_PENDING_BYTES`). */
  readonly pending: PendingBytes;
  /** Told of every answer (logs, metrics, tests). Without one, only internal failures are reported, to stderr. */
  readonly observer?: RequestObserver;
  /** Where clients' addresses are (`GEOIP`); none: no location. */
  readonly geo?: GeoIp | undefined;
}

/**
 * Starts the public listener. Bun's own body limit is lifted out of the way: over it, Bun would answer with an
 * empty 413, and the contract wants an Error object, so `MAX_BATCH_BYTES` is enforced while reading the body.
 * Development mode stays off and `error` answers anything that escapes `handle`, so Bun's HTML error page,
 * with paths and source lines, is never sent.
 */
export function serve(app: App): Server<undefined> {
  return Bun.serve({
    hostname: app.config.host,
    port: app.config.port,
    development: false,
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    fetch: (request, server) => handle(request, app, server.requestIP(request)?.address),
    error: (error) => errorResponse(fail.internal(error)),
  });
}

const pathOf = (url: URL | null): string => url?.pathname ?? "";

/**
 * Routes by hand, and is the one place a failure becomes a response; responses to an allowed origin are shared.
 * `peer` is the connection's address.
 */
export async function handle(request: Request, app: App, peer?: string): Promise<Response> {
  const url = requestUrl(request);
  const path = pathOf(url);
  const { response: routed, ...handled } = await route(request, url, path, app, peer);
  const origin = allowedOrigin(request, app.config);
  const response = origin === undefined ? routed : shareWith(routed, origin);
  const declared = request.headers.get("content-length");
  const answer: Answer = {
    ...handled,
    method: request.method,
    path,
    status: response.status,
    bytes: declared === null ? undefined : Number(declared),
  };
  if (app.observer) app.observer.answered(answer);
  else if (answer.failure?.code === "internal") console.error(`${answer.method} ${path} failed:`, answer.failure.cause);
  return response;
}

async function route(
  request: Request,
  url: URL | null,
  path: string,
  app: App,
  peer: string | undefined,
): Promise<Handled & { readonly response: Response }> {
  const routeName: Route = path === "/batch" || path === "/batch/" ? "batch" : path === "/health" ? "health" : "other";
  try {
    if (url === null) throw fail.badRequest();
    switch (routeName) {
      case "batch": {
        if (request.method === "OPTIONS") return { route: routeName, response: preflight(request, app.config) };
        if (request.method !== "POST") throw fail.methodNotAllowed(ALLOWED_METHODS);
        const result = await batch(request, url, app, peer);
        return { route: routeName, result, response: Response.json({ status: "ok", ...result }) };
      }
      case "health":
        if (request.method !== "GET" && request.method !== "HEAD") throw fail.methodNotAllowed("GET, HEAD");
        return { route: routeName, response: Response.json({ ok: true }) };
      default:
        throw fail.notFound();
    }
  } catch (error) {
    const failure = asIngestError(error);
    return { route: routeName, failure, response: errorResponse(failure) };
  }
}

/** The Error object for a failure, with its status and headers. */
function errorResponse(failure: IngestError): Response {
  return Response.json(
    { status: "error", error: failure.message },
    { status: failure.status, headers: failure.headers },
  );
}
