import type { CaptureResult, IngestError } from "../contract";
import { describeError, type Logger } from "./log";
import type { Metrics, Usage } from "./metrics";

/**
 * What each part of the service tells the outside about its work, and the observers that turn it into logs and
 * metrics. The parts report through these interfaces and never import a logger; the types live here so that
 * telemetry depends on nothing above it.
 */

// Requests to the ingest listener

export type Route = "batch" | "health" | "other";

/** What handling a request came to, as logs and metrics see it: never its body. */
export interface Handled {
  readonly route: Route;
  readonly failure?: IngestError;
  readonly result?: CaptureResult;
}

/** One answered request. */
export interface Answer extends Handled {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** The declared Content-Length, if any. */
  readonly bytes: number | undefined;
}

export interface RequestObserver {
  answered(answer: Answer): void;
}

// The write path

/** Where a flush's time went, in seconds: resolving identity (before and after its facts), then each insert. */
export type FlushPhases = Readonly<Record<"identity" | "facts" | "persons" | "links" | "events", number>>;

/** Rows a flush inserted into each identity and group table: what identity costs besides the events. */
export type IdentityRows = Readonly<
  Record<"identity_facts" | "group_facts" | "persons" | "groups" | "person_overrides" | "person_distinct_ids", number>
>;

/** What the storage tells the outside about its writes (logs, metrics). */
export interface StorageObserver {
  flushed(events: number, seconds: number, phases: FlushPhases, rows: IdentityRows): void;
  flushFailed(events: number, seconds: number, error: unknown): void;
  /** A flush failed because a table refuses what the service writes: only an operator can fix it. */
  storageRefused(refusal: StorageRefusal): void;
  cacheLookups: CacheObserver;
  /** At startup, a sole writer read the links it could hold into its cache. */
  preloaded(preloaded: Preloaded): void;
  /** A repair sweep found persons or links behind their facts, and wrote them. */
  repaired(repair: Repaired): void;
  /** A repair sweep failed; the next one tries again. */
  repairFailed(error: unknown): void;
  /** A squash rewrote the events of persons merged away to the persons they went to. */
  squashed(squash: Squashed): void;
  /** A squash failed; the next one tries again. */
  squashFailed(error: unknown): void;
  /** Days of events were merged into one part each (`SETTLE_AFTER_S`). */
  settled(settle: Settled): void;
  /** Settling failed; the next look tries again. */
  settleFailed(error: unknown): void;
  /** A missing column was added at startup, or an enum column widened. */
  schemaRepaired(table: string, column: string, type: string): void;
  /** A table of an older layout is being made again from events at startup, or is done. */
  schemaRebuilt(rebuild: Rebuilt): void;
  /** At startup, a view another version made was made again with this version's definition. */
  schemaViewReplaced(view: string): void;
  /** At startup, retention (`EVENTS_RETENTION_DAYS`) dropped months of a table, or set or removed its TTL. */
  retained(change: Retained): void;
  /** The disk the tables are on has less free than `DISK_WARN_PERCENT` (told again each hour it stays so). */
  diskLow(disk: Disk): void;
  /** The disk, low before, has room again. */
  diskRecovered(disk: Disk): void;
}

/** What a table refused: its name (when an insert into it failed) and ClickHouse's error. */
export interface StorageRefusal {
  readonly table: string | undefined;
  readonly type: string;
  readonly code: string | undefined;
}

/** The disk the tables are on. */
export type Disk = NonNullable<Usage["disk"]>;

/**
 * What retention changed in a table at startup: its TTL (`null`: removed), the months dropped, and those left to the
 * TTL because the engine refused to drop them (`cause`).
 */
export interface Retained {
  readonly table: string;
  readonly ttl?: string | null;
  readonly dropped: readonly string[];
  readonly left: readonly string[];
  readonly cause?: unknown;
}

/** A table made again from events at startup (`sessions`): why and over how many events, then how long it took. */
export type Rebuilt =
  | { readonly phase: "started"; readonly table: string; readonly reason: string; readonly events: number }
  | {
      readonly phase: "done";
      readonly table: string;
      readonly events: number;
      readonly inserts: number;
      readonly seconds: number;
    };

/**
 * Told how each flush's lookups went: `links`, how many the cache answered and how many were read; `persons`,
 * how many persons were derived from the flush's own facts and how many needed their facts read.
 */
export type CacheObserver = (kind: "links" | "persons", hits: number, misses: number) => void;

/** What `preload` did: how many links it read, in how long, and whether they were all of them. */
export interface Preloaded {
  readonly links: number;
  readonly seconds: number;
  readonly complete: boolean;
}

// The query port

/** How a query went, for logs and metrics: never its text, nor its result. */
export interface QueryAnswer {
  readonly user: string;
  readonly outcome: QueryOutcome;
  readonly status: number;
  /** The statement's type, once the engine parsed it. */
  readonly statement: string | undefined;
  /** The error's name (`UNKNOWN_TABLE`, `READONLY`, …). */
  readonly error: string | undefined;
  readonly queryId: string;
  readonly seconds: number;
  readonly resultRows: number;
  readonly resultBytes: number;
  readonly writtenRows: number;
}

/**
 * `ok`; `refused` by the port's rules (read-only, settings, table functions); `unauthenticated`; `busy` (no place
 * free); `failed` in the engine (a bad query, a limit reached, the client gone).
 */
export type QueryOutcome = "ok" | "refused" | "unauthenticated" | "busy" | "failed";

export interface QueryObserver {
  answered(answer: QueryAnswer): void;
}

/** A flush slower than this is logged as a warning. */
export const SLOW_FLUSH_SECONDS = 1;

/** Requests: counted by route and status; accepted batches sized; every 4xx and 5xx logged with its reason. */
export function requestObserver(log: Logger, metrics: Metrics): RequestObserver {
  return {
    answered({ method, path, route, status, bytes, failure, result }) {
      metrics.requests.inc({ route, status: String(status) });
      if (result) {
        metrics.eventsIngested.inc(result.ingested);
        metrics.eventsDropped.inc(result.dropped);
        metrics.batchSize.observe(result.ingested + result.dropped);
      }
      if (!failure) return;
      const fields = { method, path, status, code: failure.code, reason: failure.message, bytes };
      if (status >= 500) {
        // a refusal of the service's own (busy, shutting down) has no cause to describe
        log.error("request failed", {
          ...fields,
          ...(failure.cause !== undefined && { cause: describeError(failure.cause) }),
        });
      } else log.info("request refused", fields);
    },
  };
}

/** What a repair sweep did: the IDs whose facts it read, the rows it wrote, and how long it took. */
export interface Repaired {
  readonly ids: number;
  readonly persons: number;
  readonly links: number;
  readonly overrides: number;
  readonly seconds: number;
}

/** A squash: the overrides written before `before` (milliseconds) applied, one for each of `persons` merged away. */
export interface Squashed {
  readonly before: number;
  readonly persons: number;
  readonly seconds: number;
}

/** Days of events settled: their partition ids (`YYYYMMDD`), and how long it took. */
export interface Settled {
  readonly days: readonly string[];
  readonly seconds: number;
}

/** What an operator does about a table's refusal, by ClickHouse's error. */
const FIXES: Readonly<Record<string, string>> = {
  VIOLATED_CONSTRAINT: "drop the constraint (ALTER TABLE … DROP CONSTRAINT)",
  UNKNOWN_TABLE: "restart the service, which creates missing tables",
  UNKNOWN_DATABASE: "restart the service, which creates its database",
  NO_SUCH_COLUMN_IN_TABLE: "restart the service, which adds missing columns",
  TYPE_MISMATCH: "give the column back its type (docs/operations.md#startup-upgrades-and-the-schema)",
  FUNCTION_THROW_IF_VALUE_IS_NON_ZERO: "drop the default, TTL, index or projection that throws",
};

/** Writes: flush sizes, durations and phases, failures with their cause, slow flushes, identity cache hits and misses. */
export function storageObserver(log: Logger, metrics: Metrics): StorageObserver {
  return {
    flushed(events, seconds, phases, rows) {
      for (const [table, count] of Object.entries(rows)) if (count > 0) metrics.rowsWritten.inc({ table }, count);
      metrics.flushSize.observe(events);
      metrics.flushSeconds.observe(seconds);
      for (const [phase, phaseSeconds] of Object.entries(phases))
        metrics.flushPhaseSeconds.observe({ phase }, phaseSeconds);
      if (seconds > SLOW_FLUSH_SECONDS) log.warn("slow flush", { events, seconds, phases });
    },
    flushFailed(events, seconds, error) {
      metrics.insertErrors.inc();
      metrics.flushSeconds.observe(seconds);
      log.error("write failed", { events, seconds, cause: describeError(error) });
    },
    storageRefused({ table, type, code }) {
      metrics.storageRefusals.inc({ table: table ?? "", error: type });
      log.error("the database refuses the service's writes: an operator must fix the table", {
        table,
        type,
        code,
        fix: FIXES[type] ?? "make the table what the service's schema says (docs/operations.md)",
      });
    },
    cacheLookups(kind, hits, misses) {
      if (hits > 0) metrics.cacheLookups.inc({ kind, result: "hit" }, hits);
      if (misses > 0) metrics.cacheLookups.inc({ kind, result: "miss" }, misses);
    },
    preloaded({ links, seconds, complete }) {
      if (links > 0) log.info("identity cache preloaded", { links, seconds, complete });
    },
    repaired({ ids, persons, links, overrides, seconds }) {
      // rows behind their facts mean a write failed half-way and was never retried
      if (persons + links + overrides > 0) log.warn("identity repaired", { ids, persons, links, overrides, seconds });
      else log.debug("identity swept", { ids, seconds });
    },
    repairFailed(error) {
      log.error("identity repair failed", { cause: describeError(error) });
    },
    squashed({ before, persons, seconds }) {
      log.info("merges squashed", { before: new Date(before).toISOString(), persons, seconds });
    },
    squashFailed(error) {
      log.error("squash failed", { cause: describeError(error) });
    },
    settled({ days, seconds }) {
      log.info("days settled", { days, seconds });
    },
    settleFailed(error) {
      log.error("settling days failed", { cause: describeError(error) });
    },
    schemaRepaired(table, column, type) {
      log.warn("schema repaired: a column was added or widened", { table, column, type });
    },
    schemaRebuilt({ phase, ...rebuild }) {
      // the service does not listen until it is done
      if (phase === "started") log.warn("schema upgrade: rebuilding a table from events", rebuild);
      else log.info("schema upgrade: table rebuilt", rebuild);
    },
    schemaViewReplaced(view) {
      log.info("schema upgrade: a view made again with this version's definition", { view });
    },
    diskLow(disk) {
      log.warn("disk nearly full: ingest stops when it is", diskFields(disk));
    },
    diskRecovered(disk) {
      log.info("disk space recovered", diskFields(disk));
    },
    retained({ cause, ...change }) {
      if (cause === undefined) log.info("retention applied", change);
      else log.warn("retention applied", { ...change, cause: describeError(cause) });
    },
  };
}

/** Queries on the query port: counted by outcome, timed, their result sizes added up, each logged without its text. */
export function queryObserver(log: Logger, metrics: Metrics): QueryObserver {
  return {
    answered(answer) {
      metrics.queries.inc({ outcome: answer.outcome });
      metrics.querySeconds.observe(answer.seconds);
      if (answer.resultRows > 0) metrics.queryResultRows.inc(answer.resultRows);
      if (answer.resultBytes > 0) metrics.queryResultBytes.inc(answer.resultBytes);
      if (answer.writtenRows > 0) metrics.queryWrittenRows.inc(answer.writtenRows);
      const fields = { ...answer, seconds: Math.round(answer.seconds * 1e6) / 1e6 };
      if (answer.outcome === "unauthenticated") log.warn("query refused: authentication failed", fields);
      else log.info("query", fields);
    },
  };
}

const diskFields = ({ name, freeBytes, totalBytes }: Disk) => ({
  disk: name,
  freeBytes,
  totalBytes,
  freePercent: Math.round((freeBytes / totalBytes) * 1000) / 10,
});
