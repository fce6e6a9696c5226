import { isAbsolute, relative } from "node:path";
import { type } from "arktype";
import type { CLICKHOUSE, Fsync } from "./clickhouse";
import { ConfigError } from "./errors";
import type { Backend, Env, Setting } from "./setting";
import { SETTINGS, type SettingKey, type Settings } from "./settings";

/** Where the data goes: a ClickHouse server over HTTP, or chDB embedded in this process. */
export type ClickHouseConfig =
  | {
      readonly kind: "server";
      readonly url: string;
      readonly user: string;
      readonly password: string;
      readonly database: string;
      /** The cluster the server belongs to, for `ON CLUSTER` DDL and replicated tables; unset: one server. */
      readonly cluster: string | undefined;
    }
  | {
      readonly kind: "embedded";
      readonly dataDir: string;
      readonly database: string;
      /** Where the compiled executable unpacks its embedded engine (unused when run from source). */
      readonly nativeCacheDir: string;
      readonly fsync: Fsync;
    };

/** The settings that together say where the data goes (clickhouse.ts), gathered into `Config.clickhouse`. */
type ClickHouseKey = keyof typeof CLICKHOUSE;

/** The configuration, read once at startup: every setting of `SETTINGS`, the ClickHouse ones as one target. */
export type Config = Omit<Settings, ClickHouseKey> & { readonly clickhouse: ClickHouseConfig };

/**
 * Reads the configuration once, at startup. Unset and empty variables take their defaults; every bad value
 * is reported at once in a `ConfigError`, so an operator fixes them in one go.
 */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  const server = present(env, SETTINGS.clickhouseUrl) !== undefined;
  for (const [key, setting] of Object.entries(SETTINGS) as [SettingKey, Setting<unknown>][]) {
    const text = present(env, setting);
    if (text === undefined) {
      values[key] = typeof setting.default === "function" ? setting.default(env) : setting.default;
      continue;
    }
    if (setting.refusedElsewhere && !appliesTo(setting, server ? "server" : "embedded")) {
      problems.push(setting.refusedElsewhere);
      continue;
    }
    const parsed = setting.parse(text);
    if (parsed instanceof type.errors) problems.push(`${setting.env} ${parsed.summary}`);
    else values[key] = parsed;
  }
  // Otherwise a batch within MAX_BATCH_BYTES could be refused as busy for as long as any other request is in flight.
  const { maxPendingBytes, maxBatchBytes } = values;
  if (typeof maxPendingBytes === "number" && typeof maxBatchBytes === "number" && maxPendingBytes < maxBatchBytes) {
    problems.push(`MAX_PENDING_BYTES (${maxPendingBytes}) must be at least MAX_BATCH_BYTES (${maxBatchBytes})`);
  }
  if (values.queryPort !== undefined && values.queryPassword === "") {
    problems.push("QUERY_PORT needs QUERY_PASSWORD: whoever reaches the port can read every event");
  }
  if (values.adminPort !== undefined && values.adminToken === "") {
    problems.push("ADMIN_PORT needs ADMIN_TOKEN: whoever reaches the port can erase persons");
  }
  if (values.adminPort !== undefined && values.clickhouseCluster !== undefined) {
    problems.push("ADMIN_PORT serves ingest forget, which does not work on a cluster (CLICKHOUSE_CLUSTER) yet");
  }
  const { backupDir, dataDir: data } = values as { backupDir?: string; dataDir?: string };
  if (backupDir !== undefined && data !== undefined && (isWithin(backupDir, data) || isWithin(data, backupDir))) {
    problems.push(`BACKUP_DIR (${backupDir}) and DATA_DIR (${data}) must not be inside one another`);
  }
  const ports = [values.port, values.metricsPort, values.queryPort, values.adminPort].filter(
    (p) => typeof p === "number" && p !== 0,
  );
  if (new Set(ports).size !== ports.length) problems.push("PORT, METRICS_PORT, QUERY_PORT and ADMIN_PORT must differ");
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join("\n")}`);

  const {
    clickhouseUrl,
    clickhouseUser,
    clickhousePassword,
    clickhouseDatabase,
    clickhouseCluster,
    dataDir,
    fsync,
    chdbCacheDir,
    ...rest
  } = values as Settings;
  return {
    ...rest,
    clickhouse:
      clickhouseUrl === undefined
        ? { kind: "embedded", dataDir, database: clickhouseDatabase, nativeCacheDir: chdbCacheDir, fsync }
        : {
            kind: "server",
            url: clickhouseUrl,
            user: clickhouseUser,
            password: clickhousePassword,
            database: clickhouseDatabase,
            cluster: clickhouseCluster,
          },
  };
}

/** Whether `inner` is `outer` or inside it. */
function isWithin(inner: string, outer: string): boolean {
  const path = relative(outer, inner);
  return path === "" || (!path.startsWith("..") && !isAbsolute(path));
}

const appliesTo = (setting: Setting<unknown>, backend: Backend): boolean =>
  setting.backend === "any" || setting.backend === backend;

/** The variable's text, trimmed unless it is a secret; undefined when unset or blank. */
function present(env: Env, setting: Setting<unknown>): string | undefined {
  const value = env[setting.env];
  if (value === undefined || value.trim() === "") return undefined;
  return setting.redact === "omit" ? value : value.trim();
}

/** The configuration as it may be logged: secrets left out, api keys only counted. */
export function redacted(config: Config): Record<string, unknown> {
  const { clickhouse, ...rest } = config;
  const logged: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rest)) {
    const redact = SETTINGS[key as SettingKey]?.redact;
    if (redact === "omit") continue;
    logged[key] = value instanceof Set ? (redact === "count" ? value.size : [...value]) : value;
  }
  const { password: _, ...target } = clickhouse as ClickHouseConfig & { password?: string };
  logged.clickhouse = target;
  return logged;
}
