import { hostname } from "node:os";
import { parseArgs } from "node:util";
import type { Server } from "bun";
import pkg from "../package.json" with { type: "json" };
import { openGeoIp, PendingBytes } from "./capture";
import { backupCommand, forgetCommand, importCommand, queryCommand, restoreCommand } from "./cli";
import { type Config, ConfigError, helpText, loadConfig, OperatorError, redacted } from "./config";
import { restartFor, workerThreadsFor } from "./engine";
import { serve, serveAdmin, serveMetrics } from "./http";
import { QueryEngine, queryEngineOptions, serveQuery } from "./query";
import {
  adminObserver,
  describeError,
  Logger,
  Metrics,
  queryObserver,
  requestObserver,
  storageObserver,
} from "./telemetry";
import { Storage, serviceBackup, storageOptions } from "./write";

const USAGE = `ingest ${pkg.version}: PostHog-style event batches into ClickHouse.

Usage: ingest [--help | --version | --health-check]      the service; settings come from the environment:
       ingest query "SQL"                                 one query on its data (ingest query --help)
       ingest import FILE...                              events from files of JSON lines (ingest import --help)
       ingest backup DEST                                 a copy of the data (ingest backup --help)
       ingest restore SRC                                 a backup into an empty data directory (ingest restore --help)
       ingest forget DISTINCT_ID...                       erase persons and all their data (ingest forget --help)
`;

/** The subcommands, by the word that names them: each takes the arguments after it and returns the exit status. */
const COMMANDS = new Map<string, (args: readonly string[]) => Promise<number>>([
  ["query", queryCommand],
  ["import", importCommand],
  ["backup", backupCommand],
  ["restore", restoreCommand],
  ["forget", forgetCommand],
]);

/** The service's own flags; it takes no other argument. */
const FLAGS = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
  "health-check": { type: "boolean" },
} as const;

/**
 * The process: a subcommand, or the service, which reads the configuration, opens the storage, listens, and stops
 * gracefully on a signal. A word or flag it does not know is refused (exit 2) before any of that.
 */
async function main(args: readonly string[]): Promise<void> {
  const [word, ...rest] = args;
  if (word !== undefined && !word.startsWith("-")) {
    const command = COMMANDS.get(word);
    return command ? exit(await command(rest)) : refuse(`unknown command "${word}"`);
  }
  const flags = serviceFlags(args);
  if (typeof flags === "string") return refuse(flags);
  if (flags.version) return exit(0, pkg.version);
  if (flags.help) return exit(0, `${USAGE}\n${helpText()}`);
  const config = configOrExit();
  if (flags.healthCheck) return exit((await isHealthy(config)) ? 0 : 1);
  const notRestarted = restartFor({
    workerThreads: workerThreadsFor(config.queryPort === undefined ? 0 : config.queryConcurrency),
  });

  const log = new Logger(config.logLevel);
  if (notRestarted !== undefined) log.warn("could not start again with the runtime's settings", { notRestarted });
  const metrics = new Metrics();
  const storage = await Storage.open(storageOptions(config), storageObserver(log, metrics)).catch((error: unknown) => {
    if (error instanceof OperatorError) log.error(error.message);
    else log.error("cannot open ClickHouse", { cause: describeError(error) });
    return exit(1);
  });
  const geo = await openGeoIp(config).catch((error: unknown) => {
    log.error(error instanceof Error ? error.message : String(error));
    return exit(1);
  });
  const pending = new PendingBytes(config.maxPendingBytes);
  const server = serve({ config, sink: storage, pending, geo, observer: requestObserver(log, metrics) });
  const engine = config.queryPort === undefined ? undefined : await QueryEngine.open(queryEngineOptions(config));
  const queryServer =
    engine &&
    serveQuery(config, {
      engine,
      credentials: { user: config.queryUser, password: config.queryPassword },
      readonly: config.queryReadonly,
      displayName: hostname(),
      observer: queryObserver(log, metrics),
    });
  const metricsServer = serveMetrics(config, metrics, {
    queuedEvents: () => storage.queuedEvents,
    pendingBytes: () => pending.held,
    usage: () => storage.usage(),
    ...(engine && { runningQueries: () => engine.running }),
  });
  const adminServer = serveAdmin(config, {
    token: config.adminToken,
    forget: (ids) => storage.forget(ids),
    backup: serviceBackup(config.clickhouse, config.backupDir, (request, onProgress) =>
      storage.backup(request, onProgress),
    ),
    observer: adminObserver(log),
  });
  // before "started": whoever waits for it may stop the service at once
  let stopping = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      const running = { config, log, server, queryServer, adminServer, engine, metricsServer, storage };
      void shutdown(signal, running).then(() => exit(0));
    });
  }
  log.info("started", {
    version: pkg.version,
    url: server.url.href,
    ...(queryServer && { query: queryServer.url.href }),
    ...(adminServer && { admin: adminServer.url.href }),
    ...(metricsServer && { metrics: `${metricsServer.url.href}metrics` }),
    config: redacted(config),
  });
}

/**
 * Stops taking connections and lets requests in flight finish (their rows are written before they are
 * answered). Past SHUTDOWN_TIMEOUT_MS the remaining connections are closed: those clients get no answer and
 * retry, which stores nothing twice. Then every write already accepted is finished, and the database closed.
 */
async function shutdown(
  signal: string,
  running: {
    config: Config;
    log: Logger;
    server: Server<undefined>;
    queryServer: Server<undefined> | undefined;
    adminServer: Server<undefined> | undefined;
    engine: QueryEngine | undefined;
    metricsServer: Server<undefined> | undefined;
    storage: Storage;
  },
): Promise<void> {
  const { config, log, server, queryServer, adminServer, engine, metricsServer, storage } = running;
  log.info("shutting down", { signal });
  // Queries are cut at once, before ingest drains: their clients retry against the next instance, and a port left
  // open would take new queries for as long as the drain takes; ingest is what must finish.
  await queryServer?.stop(true);
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
  // A forget under way finishes (cut, it would leave the rest for a second run); no new one starts.
  await adminServer?.stop();
  await engine?.close();
  await metricsServer?.stop(true);
  await storage.close();
  log.info("stopped", { signal });
}

/** `--health-check`: asks a running service on this machine for /health (the container's HEALTHCHECK; no curl there). */
async function isHealthy(config: Config): Promise<boolean> {
  return fetch(`http://127.0.0.1:${config.port}/health`, { signal: AbortSignal.timeout(2_000) }).then(
    (response) => response.ok,
    () => false,
  );
}

/** The flags in `args`; or, for the first argument that is none of them, the sentence refusing it. */
function serviceFlags(args: readonly string[]): { help: boolean; version: boolean; healthCheck: boolean } | string {
  // Not strict: its errors name the argument inconsistently (`-hx` as 'x'); the tokens name it as typed.
  const { values, tokens } = parseArgs({ args: [...args], options: FLAGS, strict: false, tokens: true });
  for (const token of tokens) {
    if (token.kind === "positional") return `unexpected argument "${token.value}"`;
    if (token.kind !== "option") continue;
    if (!Object.hasOwn(FLAGS, token.name)) return `unknown flag "${token.rawName}"`;
    if (token.value !== undefined) return `${token.rawName} takes no value`;
  }
  return { help: values.help === true, version: values.version === true, healthCheck: values["health-check"] === true };
}

/** A usage error: one sentence on stderr, exit 2. */
function refuse(sentence: string): never {
  console.error(`ingest: ${sentence} (see ingest --help)`);
  return exit(2);
}

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    return exit(2);
  }
}

function exit(code: number, message?: string): never {
  if (message !== undefined) console.log(message);
  process.exit(code);
}

await main(process.argv.slice(2));
