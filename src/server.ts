import type { Server } from "bun";
import { captureBatch } from "./capture";
import type { Config } from "./config";
import { asIngestError, fail, type IngestError } from "./errors";
import type { EventSink } from "./event";

/** What a request is handled with. */
export interface App {
  readonly config: Config;
  readonly sink: EventSink;
  /** Told of every failure answered, with its code and cause (logs, metrics, tests). */
  readonly onFailure?: (failure: IngestError, request: Request) => void;
}

/**
 * Starts the HTTP server. Bun's own body limit is lifted out of the way: over it, Bun would answer with an
 * empty 413, and the spec wants an Error object, so `MAX_BATCH_BYTES` is enforced while reading the body.
 */
export function serve(app: App): Server<undefined> {
  return Bun.serve({
    hostname: app.config.host,
    port: app.config.port,
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    fetch: (request) => handle(request, app),
  });
}

/** Routes by hand, and is the one place a failure becomes a response. */
export async function handle(request: Request, app: App): Promise<Response> {
  const url = new URL(request.url);
  try {
    switch (url.pathname) {
      case "/batch":
      case "/batch/": {
        if (request.method !== "POST") throw fail.methodNotAllowed("POST");
        const { ingested, dropped } = await captureBatch(request, url, app.config, app.sink);
        return Response.json({ status: "ok", ingested, dropped });
      }
      case "/health":
        if (request.method !== "GET" && request.method !== "HEAD") throw fail.methodNotAllowed("GET");
        return Response.json({ ok: true });
      default:
        throw fail.notFound();
    }
  } catch (error) {
    const failure = asIngestError(error);
    (app.onFailure ?? logInternal)(failure, request);
    return Response.json(
      { status: "error", error: failure.message },
      { status: failure.status, headers: failure.headers },
    );
  }
}

function logInternal(failure: IngestError, request: Request): void {
  if (failure.code !== "internal") return;
  console.error(`${request.method} ${new URL(request.url).pathname} failed:`, failure.cause);
}
