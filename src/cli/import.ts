import { parseArgs } from "node:util";
import { type Config, ConfigError, loadConfig } from "../config";
import { restartFor, workerThreadsFor } from "../engine";
import {
  Checkpoint,
  directTarget,
  FORMAT_NAMES,
  type FormatName,
  httpTarget,
  ImportError,
  type ImportTarget,
  type Rejected,
  runImport,
} from "../import";
import { failure, usageError } from "./output";
import { progressView } from "./progress";

const IMPORT_USAGE = `Usage: ingest import [--url URL --api-key KEY] [--data-dir DIR] [--format NAME] [--resume]
                    [--checkpoint FILE] [--rejects FILE] [--strict] [--batch-size N] FILE...

Imports events from files of JSON lines or of one JSON array (plain or gzip; - or no FILE reads standard
input), by the same rules as POST /batch/, in file order: PostHog's events and exports, or Mixpanel, Amplitude
or Segment/RudderStack exports, the format found from each file's first line. Every event needs a timestamp,
and gets a UUID from the source's own ID or its line, so importing a file again stores nothing twice.

  --url URL          send to the service running there (batches marked historical_migration); else write in
                     this process to DATA_DIR (or --data-dir), which no running service may hold, or to
                     CLICKHOUSE_URL
  --api-key KEY      with --url: the project token (default: the first of PUBLIC_API_KEYS)
  --format NAME      read every file as ${FORMAT_NAMES.join(", ")} instead of detecting it
  --checkpoint FILE  where each file's acknowledged position is kept (default: ingest-import.checkpoint.json)
  --resume           go on from the checkpoint: skip what it says is stored
  --rejects FILE     write each rejected line there, as a JSON line with its file, line number and reason
  --strict           stop at the first rejected line
  --batch-size N     events a batch (default: 10000 in process, 5000 with --url)

Progress goes to standard error (a bar on a terminal, else a JSON line every 5 seconds); Ctrl-C or SIGTERM
stops after the batches in flight are answered, with the checkpoint written. The summary is one JSON line on
standard output. Exit status: 0 when every line was imported, 1 when any was rejected or the import failed,
2 for a usage error, 130 or 143 when stopped by SIGINT or SIGTERM.
`;

const DEFAULT_CHECKPOINT = "ingest-import.checkpoint.json";
const STOPPED_BY = { SIGINT: 130, SIGTERM: 143 } as const;

/** `ingest import`: returns the exit status. */
export async function importCommand(args: readonly string[], env = process.env): Promise<number> {
  const options = readOptions(args, env);
  if (typeof options === "number") return options;
  // it writes the events itself, as the service does
  const notRestarted = options.service === undefined ? restartFor({ workerThreads: workerThreadsFor(0) }) : undefined;
  if (notRestarted !== undefined) process.stderr.write(`ingest import: could not start again (${notRestarted})\n`);
  return await runImportCommand(options);
}

/** What `ingest import` was asked to do, checked, with the defaults filled in. */
interface ImportCommandOptions {
  /** Paths, `-` for standard input. */
  readonly files: readonly string[];
  readonly config: Config;
  /** With `--url`: the service to send to, and the project token it is sent with; else this process writes. */
  readonly service: { readonly url: string; readonly apiKey: string } | undefined;
  readonly format: FormatName | undefined;
  /** None when standard input is read: it cannot be resumed, so nothing is kept. */
  readonly checkpoint: { readonly path: string; readonly resume: boolean } | undefined;
  /** Where the rejected lines are written, if anywhere. */
  readonly rejects: string | undefined;
  readonly strict: boolean;
  readonly batchSize: number;
}

/**
 * The options in `args` and the configuration in `env`, checked in the order the user would fix them; or, when
 * there is nothing to import, the exit status, its message written: the usage asked for (0), a usage error (2)
 * or a configuration error (1).
 */
function readOptions(args: readonly string[], env: NodeJS.ProcessEnv): ImportCommandOptions | number {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(args);
  } catch (error) {
    return usage((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(IMPORT_USAGE);
    return 0;
  }
  const batchSize = values["batch-size"] === undefined ? undefined : Number(values["batch-size"]);
  if (batchSize !== undefined && !(Number.isInteger(batchSize) && batchSize > 0)) {
    return usage("--batch-size must be a positive integer");
  }
  const config = loadImportConfig(env, values["data-dir"]);
  if (typeof config === "number") return config;
  let service: ImportCommandOptions["service"];
  if (values.url !== undefined) {
    const apiKey = values["api-key"] ?? [...config.publicApiKeys][0];
    if (apiKey === undefined) return usage("--url needs --api-key (or PUBLIC_API_KEYS)");
    service = { url: values.url, apiKey };
  }
  const format = values.format;
  if (format !== undefined && !isFormatName(format)) {
    return usage(`--format must be one of ${FORMAT_NAMES.join(", ")}`);
  }
  const files = positionals.length > 0 ? positionals : ["-"];
  if (values.resume && files.includes("-")) return usage("--resume needs files: standard input cannot be resumed");
  return {
    files,
    config,
    service,
    format,
    checkpoint: files.includes("-")
      ? undefined
      : { path: values.checkpoint ?? DEFAULT_CHECKPOINT, resume: values.resume ?? false },
    rejects: values.rejects,
    strict: values.strict ?? false,
    batchSize: batchSize ?? (service !== undefined ? 5000 : 10_000),
  };
}

/** The configuration from `env`, with `--data-dir` for DATA_DIR; or, when it is wrong, exit status 1, said why. */
function loadImportConfig(env: NodeJS.ProcessEnv, dataDir: string | undefined): Config | number {
  try {
    const { QUERY_PORT: _query, METRICS_PORT: _metrics, ...settings } = env; // this process serves no port
    return loadConfig({ ...settings, ...(dataDir !== undefined && { DATA_DIR: dataDir }) });
  } catch (error) {
    if (error instanceof ConfigError) return failure(error.message);
    throw error;
  }
}

function isFormatName(name: string): name is FormatName {
  return (FORMAT_NAMES as readonly string[]).includes(name);
}

/**
 * Runs the import `options` ask for, with progress on standard error and the summary on standard output, until
 * it ends or a signal stops it; returns the exit status. The target, the signal handlers and the rejects file are
 * let go whatever happens.
 */
async function runImportCommand(options: ImportCommandOptions): Promise<number> {
  const rejects = options.rejects === undefined ? undefined : Bun.file(options.rejects).writer();
  const stop = stopOnSignals();
  const progress = progressView();
  let target: ImportTarget | undefined;
  try {
    const checkpoint =
      options.checkpoint === undefined
        ? undefined
        : Checkpoint.open(options.checkpoint.path, options.checkpoint.resume);
    target = await openTarget(options);
    const summary = await runImport({
      files: options.files,
      target,
      ...(options.format !== undefined && { format: options.format }),
      ...(checkpoint !== undefined && { checkpoint }),
      signal: stop.signal,
      onProgress: (p) => progress.show(p),
      progressEveryMs: progress.everyMs,
      batchSize: options.batchSize,
      inFlight: options.service !== undefined ? 4 : 2,
      maxLineBytes: options.config.maxBatchBytes,
      strict: options.strict,
      onReject: (rejected: Rejected) => {
        rejects?.write(`${JSON.stringify(rejected)}\n`);
      },
    });
    progress.end();
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return stop.status() ?? (Object.keys(summary.rejected).length > 0 ? 1 : 0);
  } catch (error) {
    progress.end();
    if (error instanceof ImportError) return failure(`ingest import: ${error.message}`);
    throw error;
  } finally {
    stop.dispose();
    await target?.close();
    await rejects?.end();
  }
}

/** The service at `--url`, sent batches over HTTP; else the storage this process writes itself. */
async function openTarget(options: ImportCommandOptions): Promise<ImportTarget> {
  const { service, config } = options;
  return service !== undefined
    ? httpTarget(service.url, service.apiKey, config.maxBatchBytes)
    : await directTarget(config);
}

type StopSignal = keyof typeof STOPPED_BY;

/**
 * Ctrl-C or SIGTERM: the first aborts `signal` (the import stops once the batches sent are answered), a second
 * exits at once. `status` is the exit status the signal asks for, once one came.
 */
function stopOnSignals() {
  const controller = new AbortController();
  let stoppedBy: StopSignal | undefined;
  const onSignal = (signal: StopSignal) => {
    if (stoppedBy !== undefined) process.exit(STOPPED_BY[signal]);
    stoppedBy = signal;
    process.stderr.write(`\ningest import: ${signal}: stopping once the batches sent are answered\n`);
    controller.abort();
  };
  const signals = Object.keys(STOPPED_BY) as StopSignal[];
  for (const signal of signals) process.on(signal, onSignal);
  return {
    signal: controller.signal,
    status: (): number | undefined => (stoppedBy === undefined ? undefined : STOPPED_BY[stoppedBy]),
    dispose: () => {
      for (const signal of signals) process.off(signal, onSignal);
    },
  };
}

function parseOptions(args: readonly string[]) {
  return parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      url: { type: "string" },
      "api-key": { type: "string" },
      "data-dir": { type: "string" },
      format: { type: "string" },
      checkpoint: { type: "string" },
      resume: { type: "boolean" },
      rejects: { type: "string" },
      strict: { type: "boolean" },
      "batch-size": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

function usage(message: string): number {
  return usageError(message, IMPORT_USAGE);
}
