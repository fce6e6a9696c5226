import type { Server } from "bun";
import { type CaptureResult, captureBatch } from "./capture";
import type { PendingBytes } from "./capture/pending";
import type { Config } from "./config";
import { ALLOWED_METHODS, allowedOrigin, preflight, shareWith } from "./cors";
import { asIngestError, fail, type IngestError } from "./errors";
import type { EventSink } from "./event";
import { handleQuery, type QueryApp } from "./query";
import type { Metrics, ScrapeSources } from "./telemetry";

export type Route = "batch" | "health" | "other";

/** What handling a request came to, as logs and metrics see it: never its body. */
interface Handled {
  readonly route: Route;
  readonly failure?: IngestError;
  readonly result?: CaptureResult;
}

/** One answered request. */
export interface Answer extends Handled {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** The declared Content-Length, if any. */
  readonly bytes: number | undefined;
}

export interface RequestObserver {
  answered(answer: Answer): void;
}

/** What a request is handled with. */
export interface App {
  readonly config: Config;
  readonly sink: EventSink;
  /** The body bytes in flight, shared by every request of the server (`MAX_PENDING_BYTES`). */
  readonly pending: PendingBytes;
  /** Told of every answer (logs, metrics, tests). Without one, only internal failures are reported, to stderr. */
  readonly observer?: RequestObserver;
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
    fetch: (request) => handle(request, app),
    error: (error) => errorResponse(fail.internal(error)),
  });
}

/** Starts the metrics listener on `METRICS_PORT` (`GET /metrics`, nothing else), when it is set. */
export function serveMetrics(config: Config, metrics: Metrics, sources: ScrapeSources): Server<undefined> | undefined {
  if (config.metricsPort === undefined) return undefined;
  return Bun.serve({
    hostname: config.host,
    port: config.metricsPort,
    development: false,
    fetch: async (request) => {
      if (pathOf(URL.parse(request.url, BASE_URL)) !== "/metrics") return new Response("Not found\n", { status: 404 });
      return new Response(await metrics.scrape(sources), { headers: { "Content-Type": metrics.contentType } });
    },
  });
}

/**
 * Starts the query port on `QUERY_PORT`: ClickHouse's HTTP interface over the embedded engine. A query may stay
 * silent until its result is ready, up to `QUERY_TIMEOUT_S`, so connections idle that long are not cut (Bun's
 * limit is 255 s).
 */
export function serveQuery(config: Config, app: QueryApp): Server<undefined> | undefined {
  if (config.queryPort === undefined) return undefined;
  return Bun.serve({
    hostname: config.host,
    port: config.queryPort,
    development: false,
    idleTimeout: Math.min(255, config.queryTimeoutS + 15),
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    fetch: (request) => handleQuery(request, app),
    error: () => new Response("Internal error\n", { status: 500 }),
  });
}

// Without a Host header (HTTP/1.0), or with one that is no host, Bun hands over a relative URL.
const BASE_URL = "http://localhost";

const pathOf = (url: URL | null): string => url?.pathname ?? "";

/** Routes by hand, and is the one place a failure becomes a response; responses to an allowed origin are shared. */
export async function handle(request: Request, app: App): Promise<Response> {
  const url = URL.parse(request.url, BASE_URL);
  const path = pathOf(url);
  const { response: routed, ...handled } = await route(request, url, path, app);
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
): Promise<Handled & { readonly response: Response }> {
  const routeName: Route = path === "/batch" || path === "/batch/" ? "batch" : path === "/health" ? "health" : "other";
  try {
    if (url === null) throw fail.badRequest();
    switch (routeName) {
      case "batch": {
        if (request.method === "OPTIONS") return { route: routeName, response: preflight(request, app.config) };
        if (request.method !== "POST") throw fail.methodNotAllowed(ALLOWED_METHODS);
        const result = await captureBatch(request, url, app.config, app.sink, app.pending);
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
