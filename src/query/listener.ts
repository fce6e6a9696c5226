import type { Server } from "bun";
import type { Config } from "../config";
import { QueryError } from "./errors";
import { handleQuery, type QueryApp } from "./http";

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
    // what escaped the handler (a bug): still ClickHouse's form, so that clients raise their usual error
    error: () => {
      const { text, code } = QueryError.of("UNKNOWN_EXCEPTION", "Internal error of the query port");
      const headers = { "Content-Type": "text/plain; charset=UTF-8", "X-ClickHouse-Exception-Code": String(code) };
      return new Response(`${text}\n`, { status: 500, headers });
    },
  });
}
