import type { QueryObserver } from "../query";
import type { RequestObserver } from "../server";
import type { StorageObserver } from "../storage";
import { describeError, type Logger } from "./log";
import type { Metrics } from "./metrics";

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

/** Writes: flush sizes, durations and phases, failures with their cause, slow flushes, identity cache hits and misses. */
export function storageObserver(log: Logger, metrics: Metrics): StorageObserver {
  return {
    flushed(events, seconds, phases) {
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
    cacheLookups(kind, hits, misses) {
      if (hits > 0) metrics.cacheLookups.inc({ kind, result: "hit" }, hits);
      if (misses > 0) metrics.cacheLookups.inc({ kind, result: "miss" }, misses);
    },
    preloaded({ links, seconds, complete }) {
      if (links > 0) log.info("identity cache preloaded", { links, seconds, complete });
    },
    schemaRepaired(table, column, type) {
      log.warn("schema repaired: a missing column was added", { table, column, type });
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
