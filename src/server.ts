import type { Server } from "bun";
import { captureBatch } from "./capture";
import type { Config } from "./config";
import { asIngestError, fail } from "./errors";
import type { EventSink } from "./event";

/**
 * Starts the HTTP server. Bun's own body limit is lifted out of the way: over it, Bun would answer with an
 * empty 413, and the spec wants an Error object, so `MAX_BATCH_BYTES` is enforced while reading the body.
 */
export function serve(config: Config, sink: EventSink): Server<undefined> {
  return Bun.serve({
    hostname: config.host,
    port: config.port,
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    fetch: (request) => handle(request, config, sink),
  });
}

/** Routes by hand, and is the one place a failure becomes a response. */
export async function handle(request: Request, config: Config, sink: EventSink): Promise<Response> {
  const url = new URL(request.url);
  try {
    switch (url.pathname) {
      case "/batch":
      case "/batch/": {
        if (request.method !== "POST") throw fail.methodNotAllowed("POST");
        const { ingested, dropped } = await captureBatch(request, url, config, sink);
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
    if (failure.code === "internal") console.error(`${request.method} ${url.pathname} failed:`, failure.cause);
    return Response.json(
      { status: "error", error: failure.message },
      { status: failure.status, headers: failure.headers },
    );
  }
}
