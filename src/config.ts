import { resolve } from "node:path";
import { type } from "arktype";

/** Where the data goes: a ClickHouse server over HTTP, or chDB embedded in this process. */
export type ClickHouseConfig =
  | {
      readonly kind: "server";
      readonly url: string;
      readonly user: string;
      readonly password: string;
      readonly database: string;
    }
  | { readonly kind: "embedded"; readonly dataDir: string; readonly database: string };

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
  readonly clickhouse: ClickHouseConfig;
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
  database: "default",
  dataDir: "./data",
  clickhouseUser: "default",
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
  "CLICKHOUSE_URL?": type("string.url").narrow(
    (url, ctx) => /^https?:$/.test(new URL(url).protocol) || ctx.reject({ expected: "an http(s) URL" }),
  ),
  "CLICKHOUSE_USER?": "string",
  "CLICKHOUSE_PASSWORD?": "string",
  "CLICKHOUSE_DATABASE?": /^[A-Za-z_][A-Za-z0-9_]*$/,
  "DATA_DIR?": "string",
});

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

  const database = parsed.CLICKHOUSE_DATABASE ?? DEFAULTS.database;
  return {
    host: parsed.HOST ?? DEFAULTS.host,
    port: parsed.PORT ?? DEFAULTS.port,
    allowedOrigins: new Set(parsed.ALLOWED_ORIGINS ?? []),
    publicApiKeys: new Set(parsed.PUBLIC_API_KEYS ?? []),
    maxEventsPerBatch: parsed.MAX_EVENTS_PER_BATCH ?? DEFAULTS.maxEventsPerBatch,
    maxBatchBytes: parsed.MAX_BATCH_BYTES ?? DEFAULTS.maxBatchBytes,
    requestTimeoutMs: parsed.REQUEST_TIMEOUT_MS ?? DEFAULTS.requestTimeoutMs,
    shutdownTimeoutMs: parsed.SHUTDOWN_TIMEOUT_MS ?? DEFAULTS.shutdownTimeoutMs,
    clickhouse: parsed.CLICKHOUSE_URL
      ? {
          kind: "server",
          url: parsed.CLICKHOUSE_URL,
          user: parsed.CLICKHOUSE_USER ?? DEFAULTS.clickhouseUser,
          password: parsed.CLICKHOUSE_PASSWORD ?? "",
          database,
        }
      : { kind: "embedded", dataDir: resolve(parsed.DATA_DIR ?? DEFAULTS.dataDir), database },
  };
}

const indent = (text: string): string =>
  text
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n");
