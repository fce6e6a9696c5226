import { QueryError } from "./errors";

/**
 * A request's URL parameters (and the headers that stand for some of them) as ClickHouse's HTTP interface reads
 * them: the query and the port's own parameters, `param_<name>` query parameters, and every other name a
 * setting for this query.
 */
export interface RequestParams {
  readonly query: string;
  readonly database: string | undefined;
  readonly defaultFormat: string | undefined;
  readonly queryId: string | undefined;
  readonly session: SessionParams | undefined;
  /** Buffer the whole result, so that errors get their status and the summary header is complete. */
  readonly waitEndOfQuery: boolean;
  /** Compress the response as `Accept-Encoding` allows. */
  readonly compressResponse: boolean;
  readonly params: Readonly<Record<string, string>>;
  readonly settings: Readonly<Record<string, string>>;
}

export interface SessionParams {
  readonly id: string;
  readonly timeoutS: number;
  /** `session_check=1`: the session must exist already. */
  readonly check: boolean;
  readonly close: boolean;
}

/** Longest a named session may be kept between its requests (ClickHouse's `max_session_timeout`). */
export const MAX_SESSION_TIMEOUT_S = 3600;
const DEFAULT_SESSION_TIMEOUT_S = 60;

/** Parameters the HTTP layer reads itself, or accepts and has no use for; none of them is a setting. */
const OWN = new Set([
  "query",
  "database",
  "default_format",
  "query_id",
  "session_id",
  "session_timeout",
  "session_check",
  "close_session",
  "user",
  "password",
  "quota_key",
  "wait_end_of_query",
  "enable_http_compression",
  "http_zlib_compression_level",
  "buffer_size",
  "stacktrace",
  "client_protocol_version",
  "send_progress_in_http_headers",
  "http_headers_progress_interval_ms",
  "http_response_buffer_size",
  "http_wait_end_of_query",
  "cancel_http_readonly_queries_on_client_close",
  "add_http_cors_header",
  "compress",
  "decompress",
]);

export function readParams(search: URLSearchParams, headers: Headers): RequestParams {
  const get = (name: string) => search.get(name) ?? undefined;
  const flag = (name: string) => /^(1|true)$/i.test(get(name) ?? "");
  // the port's own compression of the result, and of the body, in ClickHouse's native block format
  if (flag("compress") || flag("decompress")) {
    throw QueryError.of(
      "NOT_IMPLEMENTED",
      "ClickHouse's internal compression (compress, decompress) is not supported; use HTTP compression",
    );
  }
  const params: Record<string, string> = {};
  const settings: Record<string, string> = {};
  for (const [name, value] of search) {
    if (name.startsWith("param_")) params[name.slice("param_".length)] = value;
    else if (!OWN.has(name) && name !== "") settings[name] = value;
  }
  const sessionId = get("session_id");
  return {
    query: get("query") ?? "",
    database: headers.get("x-clickhouse-database") || get("database"),
    defaultFormat: headers.get("x-clickhouse-format") || get("default_format"),
    queryId: get("query_id") ?? (headers.get("x-clickhouse-query-id") || undefined),
    session:
      sessionId === undefined
        ? undefined
        : {
            id: sessionId,
            timeoutS: sessionTimeout(get("session_timeout")),
            check: flag("session_check"),
            close: flag("close_session"),
          },
    waitEndOfQuery: flag("wait_end_of_query"),
    compressResponse: flag("enable_http_compression"),
    params,
    settings,
  };
}

function sessionTimeout(text: string | undefined): number {
  if (text === undefined) return DEFAULT_SESSION_TIMEOUT_S;
  const seconds = Number(text);
  if (!/^\d+$/.test(text) || seconds > MAX_SESSION_TIMEOUT_S) {
    throw QueryError.of(
      "INVALID_SESSION_TIMEOUT",
      `Invalid session timeout: '${text}'; at most ${MAX_SESSION_TIMEOUT_S} seconds`,
    );
  }
  return seconds;
}

/** What every query on the port runs within. */
export interface QueryLimits {
  readonly timeoutS: number;
  readonly maxMemoryBytes: number;
  readonly maxResultBytes: number;
  readonly maxThreads: number;
}

/** The settings a query session starts with: the limits, and room for a query text of up to 1 MiB. */
export function limitSettings(limits: QueryLimits): Record<string, string | number> {
  return {
    max_execution_time: limits.timeoutS,
    timeout_overflow_mode: "throw",
    max_memory_usage: limits.maxMemoryBytes,
    max_result_bytes: limits.maxResultBytes,
    result_overflow_mode: "throw",
    max_threads: limits.maxThreads,
    max_query_size: MAX_QUERY_BYTES,
    priority: QUERY_PRIORITY,
  };
}

/** Below the write path's (`WRITE_PATH_PRIORITY`, 1): the engine suspends a query while a flush's query runs. */
export const QUERY_PRIORITY = 2;

/** The longest query text the port takes (the engine's own default `max_query_size` is 256 KiB). */
export const MAX_QUERY_BYTES = 1024 * 1024;

/** Settings that bound a query: a client may lower them, never raise or remove them (0 means no limit). */
const BOUNDS: Readonly<Record<string, keyof QueryLimits>> = {
  max_execution_time: "timeoutS",
  max_memory_usage: "maxMemoryBytes",
  max_result_bytes: "maxResultBytes",
  max_threads: "maxThreads",
};

/**
 * Settings a client may not change at all: what makes a session read-only or lets it reach further, and those
 * naming files to read or write (format schemas and templates).
 */
const FIXED =
  /^(priority|allow_ddl|allow_introspection_functions|format_schema\w*|output_format_schema|format_template_\w+|max_memory_usage_for_user|max_concurrent_queries\w*)$/;

/** Refuses settings that would raise a limit or loosen what the session may do. */
export function checkSettings(
  settings: Readonly<Record<string, string>>,
  limits: QueryLimits,
  readonly: boolean,
): void {
  for (const [name, value] of Object.entries(settings)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw QueryError.of("UNKNOWN_SETTING", `Unknown setting '${name.slice(0, 100)}'`);
    }
    const bound = BOUNDS[name];
    if (bound !== undefined) {
      const limit = limits[bound];
      if (!/^\d+$/.test(value) || Number(value) === 0 || Number(value) > limit) {
        throw cannotModify(name, `it may only be lowered here, to at most ${limit}`);
      }
    } else if (name === "readonly") {
      if (value !== (readonly ? "1" : "0")) throw cannotModify(name, "");
    } else if (FIXED.test(name)) {
      throw cannotModify(name, "");
    } else if (/_overflow_mode$/.test(name) && !/^(throw|break)$/.test(value)) {
      throw cannotModify(name, "only throw or break");
    }
  }
}

const cannotModify = (name: string, why: string) =>
  QueryError.of("READONLY", `Cannot modify '${name}' setting on this port${why && `: ${why}`}`);
