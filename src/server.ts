import type { Server } from "bun";
import { captureBatch } from "./capture";
import type { Config } from "./config";
import { fail, INTERNAL_ERROR_MESSAGE, IngestError } from "./errors";
import type { Storage } from "./storage";

/**
 * Starts the HTTP server. Bun's own body limit is lifted out of the way: over it, Bun would answer with an
 * empty 413, and the spec wants an Error object, so `MAX_BATCH_BYTES` is enforced while reading the body.
 */
export function serve(config: Config, storage: Pick<Storage, "ingest">): Server<undefined> {
  return Bun.serve({
    hostname: config.host,
    port: config.port,
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    fetch: (request) => handle(request, config, storage),
  });
}

/** Routes by hand, and is the one place a failure becomes a response. */
export async function handle(request: Request, config: Config, storage: Pick<Storage, "ingest">): Promise<Response> {
  const url = new URL(request.url);
  try {
    switch (url.pathname) {
      case "/batch":
      case "/batch/": {
        if (request.method !== "POST") throw fail.methodNotAllowed("POST");
        const { ingested, dropped } = await captureBatch(request, url, config, storage);
        return Response.json({ status: "ok", ingested, dropped });
      }
      case "/health":
        if (request.method !== "GET" && request.method !== "HEAD") throw fail.methodNotAllowed("GET");
        return Response.json({ ok: true });
      default:
        throw fail.notFound();
    }
  } catch (error) {
    return errorResponse(error, request, url);
  }
}

function errorResponse(error: unknown, request: Request, url: URL): Response {
  if (error instanceof IngestError) {
    return Response.json({ status: "error", error: error.message }, { status: error.status, headers: error.headers });
  }
  console.error(`${request.method} ${url.pathname} failed:`, error);
  return Response.json({ status: "error", error: INTERNAL_ERROR_MESSAGE }, { status: 500 });
}
