import type { Server } from "bun";
import type { Config } from "../config";
import type { Metrics, ScrapeSources } from "../telemetry";
import { requestUrl } from "./body";

/** Starts the metrics listener on `METRICS_PORT` (`GET /metrics`, nothing else), when it is set. */
export function serveMetrics(config: Config, metrics: Metrics, sources: ScrapeSources): Server<undefined> | undefined {
  if (config.metricsPort === undefined) return undefined;
  return Bun.serve({
    hostname: config.host,
    port: config.metricsPort,
    development: false,
    fetch: async (request) => {
      if (requestUrl(request)?.pathname !== "/metrics") {
        return new Response("Not found\n", { status: 404 });
      }
      return new Response(await metrics.scrape(sources), { headers: { "Content-Type": metrics.contentType } });
    },
  });
}
