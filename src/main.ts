import pkg from "../package.json" with { type: "json" };
import { PendingBytes } from "./capture/pending";
import { type Config, ConfigError, loadConfig, redacted, SETTINGS } from "./config";
import { serve } from "./server";
import { SchemaError, Storage } from "./storage";
import { describeError, Logger, Metrics, requestObserver, storageObserver } from "./telemetry";

if (process.argv.includes("--version")) {
  console.log(pkg.version);
  process.exit(0);
}
if (process.argv.includes("--help") || process.argv.includes("-h")) {
  console.log(`ingest ${pkg.version}: PostHog-style event batches into ClickHouse.

Usage: ingest [--help | --version | --health-check]. Settings come from the environment:
`);
  const width = Math.max(...SETTINGS.map((s) => s.name.length));
  for (const s of SETTINGS) console.log(`  ${s.name.padEnd(width)}  ${s.meaning} (default: ${s.default})`);
  process.exit(0);
}

/** `--health-check`: asks a running service on this machine for /health (the container's HEALTHCHECK; no curl there). */
async function healthCheck(config: Config): Promise<never> {
  const ok = await fetch(`http://127.0.0.1:${config.port}/health`, { signal: AbortSignal.timeout(2_000) }).then(
    (response) => response.ok,
    () => false,
  );
  process.exit(ok ? 0 : 1);
}

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    process.exit(2);
  }
}

const config = configOrExit();
if (process.argv.includes("--health-check")) await healthCheck(config);
const log = new Logger(config.logLevel);
const metrics = new Metrics();
const storage = await Storage.open(config.clickhouse, {
  observer: storageObserver(log, metrics),
  maxQueuedEvents: config.maxQueuedEvents,
  maxFlushEvents: config.maxFlushEvents,
  flushLingerMs: config.flushLingerMs,
  identity: { cacheCapacity: config.linkCacheEntries, personCacheBytes: config.personCacheMiB * 2 ** 20 },
}).catch((error: unknown) => {
  if (error instanceof SchemaError) log.error(error.message);
  else log.error("cannot open ClickHouse", { cause: describeError(error) });
  process.exit(1);
});
const pending = new PendingBytes(config.maxPendingBytes);
const server = serve({ config, sink: storage, observer: requestObserver(log, metrics), pending });
const metricsServer =
  config.metricsPort === undefined
    ? undefined
    : Bun.serve({
        hostname: config.host,
        port: config.metricsPort,
        development: false,
        fetch: async (request) => {
          if (new URL(request.url, "http://localhost").pathname !== "/metrics") {
            return new Response("Not found\n", { status: 404 });
          }
          metrics.queueDepth.set(storage.queuedEvents);
          metrics.pendingBytes.set(pending.held);
          await metrics.sampleActiveParts(() => storage.activeParts());
          return new Response(await metrics.text(), { headers: { "Content-Type": metrics.contentType } });
        },
      });
log.info("started", {
  version: pkg.version,
  url: server.url.href,
  ...(metricsServer && { metrics: `${metricsServer.url.href}metrics` }),
  config: redacted(config),
});

// Stop taking connections and let requests in flight finish (their rows are written before they are answered).
// Past SHUTDOWN_TIMEOUT_MS the remaining connections are closed: those clients get no answer and retry, which
// stores nothing twice. Then every write already accepted is finished, and the database closed.
let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info("shutting down", { signal });
  const drained = await Promise.race([
    server.stop().then(() => true),
    Bun.sleep(config.shutdownTimeoutMs).then(() => false),
  ]);
  if (!drained) {
    log.warn("requests still running at the shutdown deadline; closing their connections", {
      shutdownTimeoutMs: config.shutdownTimeoutMs,
    });
    await server.stop(true);
  }
  await metricsServer?.stop(true);
  await storage.close();
  log.info("stopped", { signal });
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
