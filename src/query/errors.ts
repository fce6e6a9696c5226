/**
 * Failures of the query port, as ClickHouse reports them: `Code: N. DB::Exception: <message>. (NAME)`, the code
 * in `X-ClickHouse-Exception-Code`, and the HTTP status a ClickHouse server gives that code, so that client
 * libraries raise their usual error. The engine's own errors arrive in that form already; the port's own
 * refusals are made here.
 */

/** The error codes the port raises itself: ClickHouse's numbers (test/query/errors.test.ts asks the engine for their names). */
export const CODES = {
  BAD_ARGUMENTS: 36,
  NOT_IMPLEMENTED: 48,
  SYNTAX_ERROR: 62,
  UNKNOWN_FORMAT: 73,
  UNKNOWN_COMPRESSION_METHOD: 89,
  UNKNOWN_SETTING: 115,
  TIMEOUT_EXCEEDED: 159,
  READONLY: 164,
  TOO_MANY_SIMULTANEOUS_QUERIES: 202,
  QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING: 216,
  QUERY_IS_TOO_LARGE: 229,
  SESSION_NOT_FOUND: 372,
  SESSION_IS_LOCKED: 373,
  INVALID_SESSION_TIMEOUT: 374,
  HTTP_LENGTH_REQUIRED: 381,
  ACCESS_DENIED: 497,
  AUTHENTICATION_FAILED: 516,
  UNKNOWN_EXCEPTION: 1002,
} as const;

type CodeName = keyof typeof CODES;

/** HTTP statuses by error name, as a ClickHouse server maps them; anything else is 500. */
const STATUS_BY_NAME: Readonly<Record<string, number>> = {
  REQUIRED_PASSWORD: 401,
  ...names(403, "UNKNOWN_USER WRONG_PASSWORD AUTHENTICATION_FAILED SET_NON_GRANTED_ROLE ACCESS_DENIED"),
  ...names(
    400,
    "BAD_ARGUMENTS CANNOT_COMPILE_REGEXP CANNOT_PARSE_TEXT CANNOT_PARSE_ESCAPE_SEQUENCE CANNOT_PARSE_QUOTED_STRING " +
      "CANNOT_PARSE_DATE CANNOT_PARSE_DATETIME CANNOT_PARSE_NUMBER CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING " +
      "CANNOT_PARSE_IPV4 CANNOT_PARSE_IPV6 CANNOT_PARSE_INPUT_ASSERTION_FAILED CANNOT_PARSE_UUID DUPLICATE_COLUMN " +
      "ILLEGAL_COLUMN UNKNOWN_ELEMENT_IN_AST UNKNOWN_TYPE_OF_AST_NODE THERE_IS_NO_COLUMN TOO_DEEP_AST TOO_BIG_AST " +
      "UNEXPECTED_AST_STRUCTURE SYNTAX_ERROR INCORRECT_DATA TYPE_MISMATCH VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE",
  ),
  ...names(
    404,
    "UNKNOWN_TABLE UNKNOWN_FUNCTION UNKNOWN_IDENTIFIER UNKNOWN_TYPE UNKNOWN_STORAGE UNKNOWN_DATABASE UNKNOWN_SETTING " +
      "UNKNOWN_DIRECTION_OF_SORTING UNKNOWN_AGGREGATE_FUNCTION UNKNOWN_FORMAT UNKNOWN_DATABASE_ENGINE " +
      "UNKNOWN_TYPE_OF_QUERY UNKNOWN_ROLE",
  ),
  QUERY_IS_TOO_LARGE: 413,
  NOT_IMPLEMENTED: 501,
  SOCKET_TIMEOUT: 503,
  CANNOT_OPEN_FILE: 503,
  CANNOT_SCHEDULE_TASK: 503,
  HTTP_LENGTH_REQUIRED: 411,
  TIMEOUT_EXCEEDED: 408,
  UNSUPPORTED_MEDIA_TYPE: 415,
};

function names(status: number, list: string): Record<string, number> {
  return Object.fromEntries(list.split(" ").map((name) => [name, status]));
}

/** A failure of one query, with what ClickHouse would send for it. */
export class QueryError extends Error {
  override readonly name = "QueryError";
  readonly status: number;

  constructor(
    /** ClickHouse's error code, e.g. 60. */
    readonly code: number,
    /** Its name, e.g. `UNKNOWN_TABLE`. */
    readonly type: string,
    /** The whole text ClickHouse sends: `Code: N. DB::Exception: …. (TYPE)`. */
    readonly text: string,
  ) {
    super(text);
    this.status = STATUS_BY_NAME[type] ?? 500;
  }

  /** One of the port's own refusals. */
  static of(type: CodeName, message: string): QueryError {
    const code = CODES[type];
    return new QueryError(code, type, `Code: ${code}. DB::Exception: ${message}. (${type})`);
  }

  /** An error the engine raised, in its own words; anything else is unexpected and shown by its message only. */
  static fromEngine(error: unknown): QueryError {
    const text = error instanceof Error ? error.message : String(error);
    const match = /Code: (\d+)\.[\s\S]*\(([A-Z0-9_]{3,})\)/.exec(text);
    if (match) return new QueryError(Number(match[1]), match[2]!, cleaned(text));
    return QueryError.of("UNKNOWN_EXCEPTION", text);
  }
}

/**
 * The engine's message as the client should see it. The port asks the engine to parse a query by handing it to
 * `formatQuery`, so a syntax error names that wrapper ("In scope SELECT formatQuery('…')"): the scope is dropped,
 * and the positions in the message are already those of the client's own text.
 */
function cleaned(text: string): string {
  return text.replace(/:? In scope SELECT formatQuerySingleLine\([\s\S]*\) AS \w+\.? \(/, " (").trim();
}
