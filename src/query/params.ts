import { QueryError } from "./errors";

/**
 * A request's URL parameters (and the headers that stand for some of them) as ClickHouse's HTTP interface reads
 * them: the query and the port's own parameters, `param_<name>` query parameters, and every other name a
 * setting for this query.
 */
interface RequestParams {
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
/** How long a named session is kept when its request says nothing. */
export const DEFAULT_SESSION_TIMEOUT_S = 60;

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
    queryId: queryId(get("query_id") ?? headers.get("x-clickhouse-query-id") ?? ""),
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

/**
 * A client's `query_id` without ASCII control characters, as a server (26.4 and later) takes it: it is sent back in
 * `X-ClickHouse-Query-Id`, where a line break would end the header. None left: none given, and the port makes one.
 */
function queryId(text: string): string | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const id = text.replace(/[\x00-\x1f]/g, "");
  return id === "" ? undefined : id;
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
