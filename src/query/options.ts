import type { Config } from "../config";
import type { QueryLimits } from "./settings";

/** What the query port's engine needs from the configuration. */
export interface QueryEngineOptions extends QueryLimits {
  /** The embedded engine's data directory: the one the service writes to. */
  readonly dataDir: string;
  /** Where the compiled executable unpacks the engine (unused from source). */
  readonly nativeCacheDir: string;
  /** The database a query runs in when it names none. */
  readonly database: string;
  /** `QUERY_READONLY`: no query may change anything. */
  readonly readonly: boolean;
  /** Most queries running at once. */
  readonly concurrency: number;
  /** Longest a query waits for a place. */
  readonly queueWaitMs: number;
}

/** Longest a query waits for one of `QUERY_CONCURRENCY` places before it is refused. */
export const QUEUE_WAIT_MS = 10_000;

/** The engine's options as the configuration sets them; the port serves the embedded engine only. */
export function queryEngineOptions(config: Config): QueryEngineOptions {
  if (config.clickhouse.kind !== "embedded") throw new Error("the query port serves the embedded engine only");
  return {
    dataDir: config.clickhouse.dataDir,
    nativeCacheDir: config.clickhouse.nativeCacheDir,
    database: config.clickhouse.database,
    readonly: config.queryReadonly,
    concurrency: config.queryConcurrency,
    timeoutS: config.queryTimeoutS,
    maxThreads: config.queryMaxThreads,
    maxMemoryBytes: config.queryMaxMemoryMiB * 2 ** 20,
    maxResultBytes: config.queryMaxResultMiB * 2 ** 20,
    queueWaitMs: QUEUE_WAIT_MS,
  };
}
