import { parseArgs } from "node:util";
import { type Config, ConfigError, loadConfig } from "../config";
import { directTarget, httpTarget, ImportError, type ImportTarget, type Rejected, runImport } from "../import";
import { fail } from "./output";

export const IMPORT_USAGE = `Usage: ingest import [--url URL --api-key KEY] [--data-dir DIR] [--rejects FILE] [--strict]
                    [--batch-size N] FILE...

Imports events from files of JSON lines (plain or gzip; - or no FILE reads standard input), in file order, by
the same rules as POST /batch/. Each line is a PostHog event, an array of them, a /batch/ body, or a row of
PostHog's event export. Every event needs a timestamp; one without a uuid gets one derived from its line, so
importing a file again stores nothing twice.

  --url URL          send to the service running there (batches marked historical_migration); else write in
                     this process to DATA_DIR (or --data-dir), which no running service may hold, or to
                     CLICKHOUSE_URL
  --api-key KEY      with --url: the project token (default: the first of PUBLIC_API_KEYS)
  --rejects FILE     write each rejected line there, as a JSON line with its file, line number and reason
  --strict           stop at the first rejected line
  --batch-size N     events a batch (default: 10000 in process, 1000 with --url)

The summary is one JSON line on standard output. Exit status: 0 when every line was imported, 1 when any was
rejected or the import stopped, 2 for a usage error.
`;

/** `ingest import`: returns the exit status. */
export async function importCommand(args: readonly string[], env = process.env): Promise<number> {
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
  let config: Config;
  try {
    const { QUERY_PORT: _query, METRICS_PORT: _metrics, ...settings } = env; // this process serves no port
    config = loadConfig({ ...settings, ...(values["data-dir"] !== undefined && { DATA_DIR: values["data-dir"] }) });
  } catch (error) {
    if (error instanceof ConfigError) return fail(error.message);
    throw error;
  }
  const apiKey = values["api-key"] ?? [...config.publicApiKeys][0];
  if (values.url !== undefined && apiKey === undefined) return usage("--url needs --api-key (or PUBLIC_API_KEYS)");

  const rejects = values.rejects === undefined ? undefined : Bun.file(values.rejects).writer();
  let target: ImportTarget | undefined;
  try {
    target = values.url !== undefined ? httpTarget(values.url, apiKey!) : await directTarget(config);
    const summary = await runImport({
      files: positionals.length > 0 ? positionals : ["-"],
      target,
      batchSize: batchSize ?? (values.url !== undefined ? 1000 : 10_000),
      inFlight: values.url !== undefined ? 4 : 2,
      maxLineBytes: config.maxBatchBytes,
      strict: values.strict ?? false,
      onReject: (rejected: Rejected) => {
        rejects?.write(`${JSON.stringify(rejected)}\n`);
      },
    });
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return Object.keys(summary.rejected).length > 0 ? 1 : 0;
  } catch (error) {
    if (error instanceof ImportError) return fail(`ingest import: ${error.message}`);
    throw error;
  } finally {
    await target?.close();
    await rejects?.end();
  }
}

function parseOptions(args: readonly string[]) {
  return parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      url: { type: "string" },
      "api-key": { type: "string" },
      "data-dir": { type: "string" },
      rejects: { type: "string" },
      strict: { type: "boolean" },
      "batch-size": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

function usage(message: string): number {
  process.stderr.write(`${message}\n\n${IMPORT_USAGE}`);
  return 2;
}
