import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type } from "arktype";
import { LEVELS, type Level } from "./telemetry/log";

/**
 * What the embedded engine writes to disk (fsync) before going on: nothing; the parts merges write, before the
 * parts they replace are deleted; or also every insert, before its 200.
 */
export const FSYNC_LEVELS = ["none", "merges", "all"] as const;
export type Fsync = (typeof FSYNC_LEVELS)[number];

/** Where the data goes: a ClickHouse server over HTTP, or chDB embedded in this process. */
export type ClickHouseConfig =
  | {
      readonly kind: "server";
      readonly url: string;
      readonly user: string;
      readonly password: string;
      readonly database: string;
    }
  | {
      readonly kind: "embedded";
      readonly dataDir: string;
      readonly database: string;
      /** Where the compiled executable unpacks its embedded engine (unused when run from source). */
      readonly nativeCacheDir: string;
      readonly fsync: Fsync;
    };

export interface Config {
  readonly host: string;
  readonly port: number;
  /** Browser origins, matched exactly against the `Origin` header. */
  readonly allowedOrigins: ReadonlySet<string>;
  /** Backend keys; backend (no-`Origin`) ingest is enabled exactly when this is non-empty. */
  readonly publicApiKeys: ReadonlySet<string>;
  readonly maxEventsPerBatch: number;
  readonly maxBatchBytes: number;
  /** How long a request's body may take to arrive; slower uploads get 408. */
  readonly requestTimeoutMs: number;
  /** After SIGTERM, how long requests in flight may take before their connections are closed. */
  readonly shutdownTimeoutMs: number;
  /** Most events waiting to be written; past it, requests get 503 with Retry-After. */
  readonly maxQueuedEvents: number;
  /** Most body bytes (inflated) of the requests in flight at once; past it, requests get 503 with Retry-After. */
  readonly maxPendingBytes: number;
  /** Most events one write to ClickHouse takes (concurrent requests are coalesced up to it). */
  readonly maxFlushEvents: number;
  /** How long a flush may wait for the requests the previous flush answered to come back (group commit). */
  readonly flushLingerMs: number;
  /** Most distinct ID → person links held in memory. */
  readonly linkCacheEntries: number;
  /** About how much memory cached persons may take (embedded only: a server's instances do not cache them). */
  readonly personCacheMiB: number;
  readonly clickhouse: ClickHouseConfig;
  readonly logLevel: Level;
  /** Where Prometheus metrics are served (`GET /metrics`); undefined: not served. */
  readonly metricsPort: number | undefined;
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

export const DEFAULTS = {
  host: "0.0.0.0",
  port: 8000,
  maxEventsPerBatch: 10_000,
  maxBatchBytes: 20 * 1024 * 1024,
  requestTimeoutMs: 30_000,
  shutdownTimeoutMs: 10_000,
  maxQueuedEvents: 100_000,
  maxPendingBytes: 32 * 1024 * 1024,
  maxFlushEvents: 10_000,
  flushLingerMs: 10,
  linkCacheEntries: 200_000,
  personCacheMiB: 64,
  logLevel: "info",
  database: "default",
  dataDir: "./data",
  clickhouseUser: "default",
  fsync: "merges",
} as const;

/** Larger bodies than this could not be held as one string by the JSON parser anyway. */
const MAX_BATCH_BYTES_CEILING = 1024 * 1024 * 1024;

const list = type("string").pipe((value) =>
  value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0),
);

const isOrigin = (value: string): boolean => URL.canParse(value) && new URL(value).origin === value;

const Env = type({
  "HOST?": "string",
  "PORT?": type("string.integer.parse").to("0 <= number.integer <= 65535"),
  "ALLOWED_ORIGINS?": list.to(
    type("string[]").narrow((origins, ctx) => {
      const bad = origins.find((origin) => !isOrigin(origin));
      return (
        bad === undefined || ctx.reject({ expected: "a list of origins like https://app.example.com", actual: bad })
      );
    }),
  ),
  "PUBLIC_API_KEYS?": list,
  "MAX_EVENTS_PER_BATCH?": type("string.integer.parse").to("number.integer > 0"),
  "MAX_BATCH_BYTES?": type("string.integer.parse").to(`0 < number.integer <= ${MAX_BATCH_BYTES_CEILING}`),
  "REQUEST_TIMEOUT_MS?": type("string.integer.parse").to("number.integer > 0"),
  "SHUTDOWN_TIMEOUT_MS?": type("string.integer.parse").to("number.integer >= 0"),
  "MAX_QUEUED_EVENTS?": type("string.integer.parse").to("number.integer > 0"),
  "MAX_PENDING_BYTES?": type("string.integer.parse").to("number.integer > 0"),
  "MAX_FLUSH_EVENTS?": type("string.integer.parse").to("number.integer > 0"),
  "FLUSH_LINGER_MS?": type("string.integer.parse").to("0 <= number.integer <= 1000"),
  "LINK_CACHE_ENTRIES?": type("string.integer.parse").to("number.integer > 0"),
  "PERSON_CACHE_MIB?": type("string.integer.parse").to("number.integer > 0"),
  "LOG_LEVEL?": type.enumerated(...LEVELS),
  "METRICS_PORT?": type("string.integer.parse").to("0 <= number.integer <= 65535"),
  "CLICKHOUSE_URL?": type("string.url").narrow(
    (url, ctx) => /^https?:$/.test(new URL(url).protocol) || ctx.reject({ expected: "an http(s) URL" }),
  ),
  "CLICKHOUSE_USER?": "string",
  "CLICKHOUSE_PASSWORD?": "string",
  "CLICKHOUSE_DATABASE?": /^[A-Za-z_][A-Za-z0-9_]*$/,
  "DATA_DIR?": "string",
  "CHDB_CACHE_DIR?": "string",
  "FSYNC?": type.enumerated(...FSYNC_LEVELS),
});

/** Every setting, its default and what it means: `--help` prints this, in this order. */
export const SETTINGS: readonly { readonly name: string; readonly default: string; readonly meaning: string }[] = [
  { name: "PORT", default: String(DEFAULTS.port), meaning: "listening port (0 picks a free one)" },
  { name: "HOST", default: DEFAULTS.host, meaning: "listening address" },
  { name: "ALLOWED_ORIGINS", default: "(none)", meaning: "comma-separated browser origins, matched exactly" },
  { name: "PUBLIC_API_KEYS", default: "(none)", meaning: "comma-separated api keys; backend ingest is on when set" },
  { name: "MAX_EVENTS_PER_BATCH", default: String(DEFAULTS.maxEventsPerBatch), meaning: "most items per batch (413)" },
  {
    name: "MAX_BATCH_BYTES",
    default: String(DEFAULTS.maxBatchBytes),
    meaning: "most body bytes, wire and inflated (413)",
  },
  {
    name: "REQUEST_TIMEOUT_MS",
    default: String(DEFAULTS.requestTimeoutMs),
    meaning: "time for a body to arrive (408)",
  },
  {
    name: "SHUTDOWN_TIMEOUT_MS",
    default: String(DEFAULTS.shutdownTimeoutMs),
    meaning: "after SIGTERM, time before open connections are closed",
  },
  {
    name: "MAX_QUEUED_EVENTS",
    default: String(DEFAULTS.maxQueuedEvents),
    meaning: "most events waiting to be written; past it 503 with Retry-After",
  },
  {
    name: "MAX_PENDING_BYTES",
    default: String(DEFAULTS.maxPendingBytes),
    meaning: "most body bytes of requests in flight at once; past it 503 with Retry-After",
  },
  {
    name: "MAX_FLUSH_EVENTS",
    default: String(DEFAULTS.maxFlushEvents),
    meaning: "most events one write takes (a whole batch always fits)",
  },
  {
    name: "FLUSH_LINGER_MS",
    default: String(DEFAULTS.flushLingerMs),
    meaning: "most a write waits for the clients it just answered to send again (0: never)",
  },
  {
    name: "LINK_CACHE_ENTRIES",
    default: String(DEFAULTS.linkCacheEntries),
    meaning: "distinct ID links held in memory (about 230 bytes each)",
  },
  {
    name: "PERSON_CACHE_MIB",
    default: String(DEFAULTS.personCacheMiB),
    meaning: "memory for cached persons (embedded only)",
  },
  { name: "LOG_LEVEL", default: DEFAULTS.logLevel, meaning: `${LEVELS.join(", ")}: JSON lines on stdout` },
  { name: "METRICS_PORT", default: "(off)", meaning: "serve Prometheus metrics at GET /metrics on this port" },
  { name: "CLICKHOUSE_URL", default: "(embedded chDB)", meaning: "a ClickHouse server over HTTP(S)" },
  { name: "CLICKHOUSE_USER", default: DEFAULTS.clickhouseUser, meaning: "server user" },
  { name: "CLICKHOUSE_PASSWORD", default: "(empty)", meaning: "server password" },
  { name: "CLICKHOUSE_DATABASE", default: DEFAULTS.database, meaning: "database for every table, created if missing" },
  { name: "DATA_DIR", default: DEFAULTS.dataDir, meaning: "embedded engine's data directory" },
  {
    name: "FSYNC",
    default: DEFAULTS.fsync,
    meaning: "what the embedded engine puts on disk before going on: none, merges, all (every insert before its 200)",
  },
  {
    name: "CHDB_CACHE_DIR",
    default: "$XDG_CACHE_HOME/ingest, else ~/.cache/ingest, else <tmp>/ingest-cache",
    meaning: "where the compiled executable unpacks its embedded engine (about 570 MB, once)",
  },
];

/** The configuration as it may be logged: secrets left out, api keys only counted. */
export function redacted(config: Config): Record<string, unknown> {
  const { clickhouse, allowedOrigins, publicApiKeys, ...rest } = config;
  return {
    ...rest,
    allowedOrigins: [...allowedOrigins],
    publicApiKeys: publicApiKeys.size,
    clickhouse:
      clickhouse.kind === "server"
        ? { kind: clickhouse.kind, url: clickhouse.url, user: clickhouse.user, database: clickhouse.database }
        : clickhouse,
  };
}

/** The variables this service reads; nothing else in the environment is looked at. */
export const ENV_NAMES: readonly string[] = Env.props.map((prop) => String(prop.key));

/**
 * Reads the configuration once, at startup. Unset and empty variables take their defaults; every bad value
 * is reported at once in a `ConfigError`, so an operator fixes them in one go.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const present: Record<string, string> = {};
  for (const name of ENV_NAMES) {
    const value = env[name];
    if (value !== undefined && value.trim() !== "")
      present[name] = name === "CLICKHOUSE_PASSWORD" ? value : value.trim();
  }
  const parsed = Env(present);
  if (parsed instanceof type.errors) throw new ConfigError(`Invalid configuration:\n${indent(parsed.summary)}`);

  const maxBatchBytes = parsed.MAX_BATCH_BYTES ?? DEFAULTS.maxBatchBytes;
  const maxPendingBytes = parsed.MAX_PENDING_BYTES ?? DEFAULTS.maxPendingBytes;
  if (maxPendingBytes < maxBatchBytes) {
    // Otherwise a batch within MAX_BATCH_BYTES could be refused as busy for as long as any other request is in flight.
    throw new ConfigError(
      `Invalid configuration:\n  MAX_PENDING_BYTES (${maxPendingBytes}) must be at least MAX_BATCH_BYTES (${maxBatchBytes})`,
    );
  }
  if (parsed.CLICKHOUSE_URL && parsed.FSYNC) {
    // Silently ignored, FSYNC=all would promise a durability that only the server's own settings decide.
    throw new ConfigError(
      "Invalid configuration:\n  FSYNC applies to the embedded engine; with CLICKHOUSE_URL the server's own settings decide (fsync_after_insert)",
    );
  }
  const database = parsed.CLICKHOUSE_DATABASE ?? DEFAULTS.database;
  return {
    host: parsed.HOST ?? DEFAULTS.host,
    port: parsed.PORT ?? DEFAULTS.port,
    allowedOrigins: new Set(parsed.ALLOWED_ORIGINS ?? []),
    publicApiKeys: new Set(parsed.PUBLIC_API_KEYS ?? []),
    maxEventsPerBatch: parsed.MAX_EVENTS_PER_BATCH ?? DEFAULTS.maxEventsPerBatch,
    maxBatchBytes,
    requestTimeoutMs: parsed.REQUEST_TIMEOUT_MS ?? DEFAULTS.requestTimeoutMs,
    shutdownTimeoutMs: parsed.SHUTDOWN_TIMEOUT_MS ?? DEFAULTS.shutdownTimeoutMs,
    maxQueuedEvents: parsed.MAX_QUEUED_EVENTS ?? DEFAULTS.maxQueuedEvents,
    maxPendingBytes,
    maxFlushEvents: parsed.MAX_FLUSH_EVENTS ?? DEFAULTS.maxFlushEvents,
    flushLingerMs: parsed.FLUSH_LINGER_MS ?? DEFAULTS.flushLingerMs,
    linkCacheEntries: parsed.LINK_CACHE_ENTRIES ?? DEFAULTS.linkCacheEntries,
    personCacheMiB: parsed.PERSON_CACHE_MIB ?? DEFAULTS.personCacheMiB,
    logLevel: parsed.LOG_LEVEL ?? DEFAULTS.logLevel,
    metricsPort: parsed.METRICS_PORT,
    clickhouse: parsed.CLICKHOUSE_URL
      ? {
          kind: "server",
          url: parsed.CLICKHOUSE_URL,
          user: parsed.CLICKHOUSE_USER ?? DEFAULTS.clickhouseUser,
          password: parsed.CLICKHOUSE_PASSWORD ?? "",
          database,
        }
      : {
          kind: "embedded",
          dataDir: resolve(parsed.DATA_DIR ?? DEFAULTS.dataDir),
          database,
          nativeCacheDir: resolve(parsed.CHDB_CACHE_DIR ?? defaultCacheDir(env)),
          fsync: parsed.FSYNC ?? DEFAULTS.fsync,
        },
  };
}

/** The usual per-user cache directory, or the system's temporary directory when there is no home. */
function defaultCacheDir(env: Record<string, string | undefined>): string {
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, "ingest");
  if (env.HOME) return join(env.HOME, ".cache", "ingest");
  return join(tmpdir(), "ingest-cache");
}

const indent = (text: string): string =>
  text
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n");
