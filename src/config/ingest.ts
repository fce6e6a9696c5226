import { type } from "arktype";
import { list, origins, port, positive, set } from "./parse";
import { setting, type Topic } from "./setting";

/** Larger bodies than this could not be held as one string by the JSON parser anyway. */
const MAX_BATCH_BYTES_CEILING = 2 ** 30;

/**
 * Ingest: where the listener listens, who may send, how much a request may carry and how long it may take; then
 * how many events may wait to be written, and how writes gather them (src/http, src/capture, src/write).
 */
export const INGEST = {
  port: setting({
    env: "PORT",
    parse: port,
    default: 8000,
    help: "Listening port (0 picks a free one).",
    backend: "any",
  }),
  host: setting({ env: "HOST", parse: type("string"), default: "0.0.0.0", help: "Listening address.", backend: "any" }),
  allowedOrigins: setting<ReadonlySet<string>>({
    env: "ALLOWED_ORIGINS",
    parse: set(origins),
    default: new Set(),
    shownDefault: "none",
    help: "Comma-separated browser origins (`scheme://host[:port]`), matched exactly against `Origin`.",
    backend: "any",
  }),
  publicApiKeys: setting<ReadonlySet<string>>({
    env: "PUBLIC_API_KEYS",
    parse: set(list),
    default: new Set(),
    shownDefault: "none",
    help: "Comma-separated api keys. Backend (no-`Origin`) ingest is on exactly when one is set.",
    backend: "any",
    redact: "count",
  }),
  maxEventsPerBatch: setting({
    env: "MAX_EVENTS_PER_BATCH",
    parse: positive,
    default: 10_000,
    help: "Most items in one batch; more is 413.",
    backend: "any",
  }),
  maxBatchBytes: setting({
    env: "MAX_BATCH_BYTES",
    parse: type("string.integer.parse").to(`0 < number.integer <= ${MAX_BATCH_BYTES_CEILING}`),
    default: 20 * 2 ** 20,
    shownDefault: "`20971520` (20 MiB)",
    help: "Most body bytes, on the wire and again after gzip inflation; more is 413. At most 1 GiB.",
    backend: "any",
  }),
  requestTimeoutMs: setting({
    env: "REQUEST_TIMEOUT_MS",
    parse: positive,
    default: 30_000,
    help: "How long a request body may take to arrive; a slower upload is cut off with 408.",
    backend: "any",
  }),
  shutdownTimeoutMs: setting({
    env: "SHUTDOWN_TIMEOUT_MS",
    parse: type("string.integer.parse").to("number.integer >= 0"),
    default: 10_000,
    help: "After SIGTERM or SIGINT, how long requests in flight may run before their connections are closed.",
    backend: "any",
  }),
  maxQueuedEvents: setting({
    env: "MAX_QUEUED_EVENTS",
    parse: positive,
    default: 100_000,
    help: "Most events waiting to be written; past it, 503 with `Retry-After: 1`.",
    backend: "any",
  }),
  maxPendingBytes: setting({
    env: "MAX_PENDING_BYTES",
    parse: positive,
    default: 32 * 2 ** 20,
    shownDefault: "`33554432` (32 MiB)",
    help: "Most body bytes (inflated) of all requests in flight; past it, 503 with `Retry-After: 1`. At least `MAX_BATCH_BYTES`.",
    backend: "any",
  }),
  maxFlushEvents: setting({
    env: "MAX_FLUSH_EVENTS",
    parse: positive,
    default: 10_000,
    help: "Most events one write to ClickHouse takes; concurrent requests are coalesced up to it (a batch is never split).",
    backend: "any",
  }),
  flushLingerMs: setting({
    env: "FLUSH_LINGER_MS",
    parse: type("string.integer.parse").to("0 <= number.integer <= 1000"),
    default: 10,
    help: "Most a write waits for the clients the previous write answered to send again (0: never).",
    backend: "any",
  }),
} as const satisfies Topic;
