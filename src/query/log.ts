import type { Session } from "chdb";

/**
 * `system.query_log` of the port: the engine keeps none (chDB runs no system logs), and clients and tools read it to
 * find a query's figures by its ID. Each query the port answers is recorded as a server records it, a `QueryStart`
 * row and a `QueryFinish` (or `ExceptionBeforeStart`, `ExceptionWhileProcessing`) row, with the text the client
 * sent (never the values the port bound into it, nor an INSERT's data). Rows are written about once a second, as a
 * server flushes its log, into a Memory table of the port's database that keeps the last `QUERY_LOG_ROWS` or so.
 */

/** Rows the log keeps: the engine drops whole blocks (a flush each), the oldest first, once there are more. */
export const QUERY_LOG_ROWS = 100_000;

export const QUERY_LOG_TABLE = `CREATE TABLE IF NOT EXISTS {database}.query_log
(
    type Enum8('QueryStart' = 1, 'QueryFinish' = 2, 'ExceptionBeforeStart' = 3, 'ExceptionWhileProcessing' = 4),
    event_date Date,
    event_time DateTime,
    event_time_microseconds DateTime64(6),
    query_start_time DateTime,
    query_start_time_microseconds DateTime64(6),
    query_duration_ms UInt64,
    read_rows UInt64,
    read_bytes UInt64,
    written_rows UInt64,
    written_bytes UInt64,
    result_rows UInt64,
    result_bytes UInt64,
    memory_usage UInt64,
    current_database String,
    query String,
    query_kind LowCardinality(String),
    exception_code Int32,
    exception String,
    is_initial_query UInt8,
    user String,
    query_id String,
    initial_user String,
    initial_query_id String,
    interface UInt8,
    http_method UInt8
)
ENGINE = Memory SETTINGS max_rows_to_keep = ${QUERY_LOG_ROWS}`;

/** One answered query, as the port saw it. */
export interface LoggedQuery {
  readonly queryId: string;
  readonly user: string;
  /** The text the client sent, up to an INSERT's data. */
  readonly text: string;
  /** The statement's type, when the engine parsed it. */
  readonly statement: string | undefined;
  readonly database: string;
  readonly startedAt: Date;
  readonly seconds: number;
  readonly resultRows: number;
  readonly resultBytes: number;
  readonly writtenRows: number;
  /** The error, and whether the query had started when it came. */
  readonly error: { readonly code: number; readonly text: string; readonly whileProcessing: boolean } | undefined;
  readonly method: string;
}

/** Longest query text kept in the log. */
const MAX_TEXT = 64 * 1024;
/** How long a row waits before it is written, as a server flushes its log (`flush_interval_milliseconds`). */
export const FLUSH_INTERVAL_MS = 1000;

export class QueryLog {
  #pending: string[] = [];
  #timer: Timer | undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly session: Session,
    private readonly table: string,
  ) {}

  record(query: LoggedQuery): void {
    const finishedAt = new Date(query.startedAt.getTime() + query.seconds * 1000);
    const common = {
      event_date: day(finishedAt),
      query_start_time: seconds(query.startedAt),
      query_start_time_microseconds: micros(query.startedAt),
      current_database: query.database,
      query: query.text.slice(0, MAX_TEXT),
      query_kind: kindOf(query.statement),
      is_initial_query: 1,
      user: query.user,
      query_id: query.queryId,
      initial_user: query.user,
      initial_query_id: query.queryId,
      interface: 2, // HTTP
      http_method: query.method === "GET" ? 1 : 2,
    };
    const start = { ...common, type: "QueryStart", event_time: seconds(query.startedAt) };
    const end = {
      ...common,
      type: query.error
        ? query.error.whileProcessing
          ? "ExceptionWhileProcessing"
          : "ExceptionBeforeStart"
        : "QueryFinish",
      event_time: seconds(finishedAt),
      event_time_microseconds: micros(finishedAt),
      query_duration_ms: Math.round(query.seconds * 1000),
      result_rows: query.resultRows,
      result_bytes: query.resultBytes,
      written_rows: query.writtenRows,
      exception_code: query.error?.code ?? 0,
      exception: query.error?.text.slice(0, MAX_TEXT) ?? "",
    };
    const rows = query.error && !query.error.whileProcessing ? [end] : [start, end];
    for (const row of rows) this.#pending.push(JSON.stringify(row));
    this.#timer ??= setTimeout(() => void this.flush(), FLUSH_INTERVAL_MS).unref();
  }

  /** Writes what is pending; a failed write is dropped (the log is best effort, as a server's is). */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const rows = this.#pending.splice(0);
    if (rows.length > 0) {
      this.#flushing = this.#flushing.then(() =>
        this.session
          .queryAsync(`INSERT INTO ${this.table} FORMAT JSONEachRow\n${rows.join("\n")}`)
          .then(() => undefined)
          .catch(() => undefined),
      );
    }
    return this.#flushing;
  }

  async close(): Promise<void> {
    await this.flush();
    this.session.close();
  }
}

/** The kind ClickHouse logs for a statement type. */
function kindOf(statement: string | undefined): string {
  if (statement === undefined) return "";
  if (statement.startsWith("Select") || statement === "Explain" || statement.startsWith("Show")) return "Select";
  const kinds: Record<string, string> = {
    InsertQuery: "Insert",
    CreateQuery: "Create",
    DropQuery: "Drop",
    AlterQuery: "Alter",
    Rename: "Rename",
    TruncateQuery: "Drop",
    OptimizeQuery: "Optimize",
    DeleteQuery: "Delete",
    UpdateQuery: "Update",
    UseQuery: "Use",
    DescribeQuery: "Describe",
    ExistsTableQuery: "Exists",
  };
  return kinds[statement] ?? "";
}

const day = (date: Date) => date.toISOString().slice(0, 10);
const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
const micros = (date: Date) => (date.getTime() / 1000).toFixed(6);
