/**
 * Every failure a client can see, as one table of stable codes. The code decides the HTTP status; tests, logs
 * and metrics use the code, clients see the status and the message. The contract's fixed message texts live
 * here and nowhere else (docs/behaviour.md#errors); the server turns an `IngestError` into the Error object in
 * one place, and `fail` has one maker per code, named after it.
 */
const STATUS = {
  invalid_payload: 400,
  invalid_gzip: 400,
  invalid_timestamp: 400,
  too_deep: 400,
  bad_request: 400,
  incomplete_body: 400,
  mixed_api_keys: 400,
  invalid_api_key: 401,
  origin_not_allowed: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  body_too_large: 413,
  too_many_events: 413,
  unsupported_content_type: 415,
  unsupported_content_encoding: 415,
  compression_not_supported: 415,
  internal: 500,
  busy: 503,
  shutting_down: 503,
  storage_refused: 503,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof STATUS;

/** Every code, in the table's order. */
export const ERROR_CODES = Object.keys(STATUS) as ErrorCode[];

interface ErrorOptions {
  /** What went wrong underneath (a zlib or JSON error, a database error): logged, never sent. */
  readonly cause?: unknown;
  readonly headers?: Record<string, string>;
}

export class IngestError extends Error {
  override readonly name = "IngestError";
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    readonly code: ErrorCode,
    message: string,
    { cause, headers = {} }: ErrorOptions = {},
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.status = STATUS[code];
    this.headers = headers;
  }
}

/** `snake_case` as `camelCase`: the name of a code's maker in `fail`. */
type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;

export const fail = {
  invalidPayload: (cause?: unknown) =>
    new IngestError("invalid_payload", "Payload must be a JSON object with a non-empty batch array", { cause }),
  invalidGzip: (cause: unknown) => new IngestError("invalid_gzip", "Request body is not valid gzip", { cause }),
  invalidTimestamp: (index: number) =>
    new IngestError(
      "invalid_timestamp",
      `Invalid timestamp in batch[${index}]: expected an ISO 8601 date-time between 1900 and 2299`,
    ),
  tooDeep: (index: number, max: number) =>
    new IngestError("too_deep", `Properties of batch[${index}] nest deeper than ${max} levels`),
  badRequest: () => new IngestError("bad_request", "Bad request"),
  incompleteBody: (cause: unknown) =>
    new IngestError("incomplete_body", "Request body was not received completely", { cause }),
  mixedApiKeys: () => new IngestError("mixed_api_keys", "Mixed api_key values in one request are not supported"),
  invalidApiKey: () => new IngestError("invalid_api_key", "Invalid api_key"),
  originNotAllowed: () => new IngestError("origin_not_allowed", "Origin is not allowed"),
  notFound: () => new IngestError("not_found", "Not found"),
  methodNotAllowed: (allowed: string) =>
    new IngestError("method_not_allowed", `Method not allowed. Use ${allowed}.`, { headers: { Allow: allowed } }),
  bodyTooLarge: (max: number) =>
    new IngestError("body_too_large", `Request body is larger than the maximum of ${max} bytes`),
  tooManyEvents: (count: number, max: number) =>
    new IngestError("too_many_events", `Batch has ${count} events, maximum is ${max}`),
  unsupportedContentType: () =>
    new IngestError("unsupported_content_type", "Unsupported content type. Use application/json."),
  unsupportedContentEncoding: (value: string) =>
    new IngestError("unsupported_content_encoding", `Unsupported content-encoding: ${value}`),
  compressionNotSupported: () =>
    new IngestError(
      "compression_not_supported",
      "The compression query parameter is not supported. Send gzip-compressed JSON with Content-Encoding: gzip instead.",
    ),
  requestTimeout: (ms: number) =>
    new IngestError("request_timeout", `Request body was not received within ${ms / 1000} seconds`, {
      headers: { Connection: "close" },
    }),
  /** Too much work waiting (queued events, or request bodies in flight); SDKs retry a 503 after the pause it names. */
  busy: () => new IngestError("busy", "The service is busy; retry shortly", { headers: { "Retry-After": "1" } }),
  /** The request reached a service that is stopping; another instance, or this one restarted, will take it. */
  shuttingDown: () =>
    new IngestError("shutting_down", "The service is shutting down; retry shortly", {
      headers: { "Retry-After": "5" },
    }),
  /**
   * The database refuses every write for what one of its tables is (a constraint, a column, a table missing): an
   * operator must fix the table. A 5xx, so that SDKs keep the events and retry (a 4xx would drop them, a 200 lie),
   * slowly; the answer names what is wrong, never the database's message, which quotes rows of other requests.
   */
  storageRefused: (table: string | undefined, type: string, cause: unknown) =>
    new IngestError(
      "storage_refused",
      `The database refuses these events (${type}${table === undefined ? "" : ` on table ${table}`}): an operator must fix the table; retry later`,
      { cause, headers: { "Retry-After": "60" } },
    ),
  /** Anything unexpected: the cause is logged, never sent. The client may retry. */
  internal: (cause: unknown) => new IngestError("internal", "Internal server error", { cause }),
} as const satisfies { readonly [Code in ErrorCode as CamelCase<Code>]: (...args: never[]) => IngestError };

/** The failure as a client sees it: an `IngestError` as it is, anything else as `internal`. */
export function asIngestError(error: unknown): IngestError {
  return error instanceof IngestError ? error : fail.internal(error);
}
