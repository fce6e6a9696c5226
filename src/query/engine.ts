import type { Session } from "chdb";
import type { Config } from "../config";
import { detachStdin } from "../stdin";
import { prepareEmbeddedEngine } from "../storage/embedded/unpack";
import { literal } from "../storage/sql";
import { bindParams, unescapeText } from "./bind";
import { QueryError } from "./errors";
import { checkSettings, limitSettings, type QueryLimits, type SessionParams } from "./params";
import { type Access, type AstNode, checkStatement, functionName, parseAst } from "./policy";

export interface QueryEngineOptions extends QueryLimits {
  /** The embedded engine's data directory: the one the service writes to. */
  readonly dataDir: string;
  /** Where the compiled executable unpacks the engine (unused from source). */
  readonly nativeCacheDir: string;
  /** The database a query runs in when it names none. */
  readonly database: string;
  /** `QUERY_READONLY`: no query may change anything. */
  readonly readonly: boolean;
  /** Most queries running at once. */
  readonly concurrency: number;
  /** Longest a query waits for a place. */
  readonly queueWaitMs: number;
}

/** The engine's options as the configuration sets them; the port serves the embedded engine only. */
export function queryEngineOptions(config: Config): QueryEngineOptions {
  if (config.clickhouse.kind !== "embedded") throw new Error("the query port serves the embedded engine only");
  return {
    dataDir: config.clickhouse.dataDir,
    nativeCacheDir: config.clickhouse.nativeCacheDir,
    database: config.clickhouse.database,
    readonly: config.queryReadonly,
    concurrency: config.queryConcurrency,
    timeoutS: config.queryTimeoutS,
    maxThreads: config.queryMaxThreads,
    maxMemoryBytes: config.queryMaxMemoryMiB * 2 ** 20,
    maxResultBytes: config.queryMaxResultMiB * 2 ** 20,
    queueWaitMs: QUEUE_WAIT_MS,
  };
}

/** One query, as the HTTP layer hands it over. */
export interface QueryRequest {
  readonly text: string;
  /** An INSERT's data, when its statement came in the `query` parameter and the data in the body. */
  readonly data: Uint8Array | undefined;
  /** `write` only for a POST when writes are allowed: GET never writes, as on a ClickHouse server. */
  readonly access: Access;
  readonly database: string | undefined;
  readonly defaultFormat: string | undefined;
  readonly params: Readonly<Record<string, string>>;
  readonly settings: Readonly<Record<string, string>>;
  readonly session: SessionParams | undefined;
}

/** A query that has started: its first chunk of output is read, so a query that fails at once has thrown. */
export interface RunningQuery {
  /** The statement's type, as the engine parsed it (`SelectWithUnionQuery`, `InsertQuery`, …). */
  readonly statement: string;
  /** The output format, or undefined when the statement has no output. */
  readonly format: string | undefined;
  readonly writtenRows: number;
  /** Result rows and bytes sent so far. */
  readonly result: { rows: number; bytes: number };
  /** The rest of the output, chunk by chunk; the first one first. Ends, or throws, once; then the query is over. */
  chunks(): AsyncGenerator<Uint8Array>;
  /** Stops the query and frees what it holds (idempotent; the end of `chunks` does it too). */
  close(): void;
}

/** Statements whose result the engine streams. */
const STREAMED = new Set(["SelectWithUnionQuery", "SelectIntersectExceptQuery"]);

/** Longest a query waits for one of `QUERY_CONCURRENCY` places before it is refused. */
export const QUEUE_WAIT_MS = 10_000;
/** Most queries waiting for a place; beyond, a query is refused at once. */
const MAX_WAITING = 64;
/** Most named sessions (`session_id`) kept at once. */
const MAX_SESSIONS = 64;

/**
 * The query port's access to the embedded engine. Every query runs on a session of its own (a named one for
 * `session_id`), never the write path's: chDB runs one query at a time per session, and sessions on one data
 * directory run in parallel, so a query never holds up a flush. A session starts with the port's limits and
 * the client's settings, then `readonly = 1` (unless writes are allowed), after which the engine itself refuses
 * every change of them. See docs/query.md#how-a-query-runs.
 */
export class QueryEngine {
  readonly #places: Places;
  readonly #named = new Map<string, NamedSession>();

  private constructor(
    private readonly Session: SessionConstructor,
    private readonly options: QueryEngineOptions,
    /** The engine's time zone, for `X-ClickHouse-Timezone`. */
    readonly timezone: string,
  ) {
    this.#places = new Places(options.concurrency, options.queueWaitMs);
  }

  /** Loads chDB (unpacking it first in the compiled executable) and opens the data directory. */
  static async open(options: QueryEngineOptions): Promise<QueryEngine> {
    await prepareEmbeddedEngine(options.nativeCacheDir);
    detachStdin(); // a writable port's inserts would take what waits on standard input for their data
    // chDB's ESM entry loads its CommonJS one at run time (createRequire), out of the compiled executable's reach;
    // a require here is bundled, and still runs only now, after the engine is unpacked.
    const { Session } = require("chdb") as typeof import("chdb");
    const probe = new Session(options.dataDir);
    try {
      const timezone = (await probe.queryAsync("SELECT timezone()", { format: "TSVRaw" })).text().trim();
      return new QueryEngine(Session, options, timezone);
    } finally {
      probe.close();
    }
  }

  /** Queries running now. */
  get running(): number {
    return this.#places.taken;
  }

  /** Starts a query: checks it, runs it, and reads its first chunk of output. Throws a `QueryError`. */
  async run(request: QueryRequest): Promise<RunningQuery> {
    const readonly = request.access === "read";
    checkSettings(request.settings, this.options, readonly);
    const releases: (() => void)[] = [];
    const release = () => {
      for (const step of releases.splice(0).reverse()) step();
    };
    try {
      releases.push(await this.#places.take());
      const session = request.session
        ? this.#namedSession(request.session, request.settings, readonly, releases)
        : this.#freshSession(request.settings, readonly, releases);
      const { session: s, setup } = session;
      await setup;
      if (request.database !== undefined) await run(s, `USE ${identifier(request.database)}`);
      const inspected = await inspect(s, request.text, request.params, request.access);
      if (inspected.insert !== undefined) {
        if (request.data === undefined) {
          throw QueryError.of(
            "BAD_ARGUMENTS",
            "Send an INSERT's statement in the query parameter and its data in the request body",
          );
        }
        return await insert(s, inspected.statement, inspected.insert, request.data, release);
      }
      const format = inspected.format ?? request.defaultFormat ?? "TabSeparated";
      if (!STREAMED.has(inspected.statement)) {
        // chDB streams SELECTs only; the others (SHOW, DESCRIBE, EXPLAIN, DDL) answer little, all at once
        const result = await s.queryAsync(inspected.formatted, { format });
        return await started(
          inspected.statement,
          format,
          [{ raw: () => result.bytes(), numRows: result.rowsRead }],
          release,
        );
      }
      const stream = s.queryStream(inspected.formatted, { format });
      releases.push(() => stream.cancel());
      return await started(inspected.statement, format, stream, release);
    } catch (error) {
      release();
      throw error instanceof QueryError ? error : QueryError.fromEngine(error);
    }
  }

  /** Closes the named sessions; queries still running close theirs when they end. */
  close(): void {
    for (const named of this.#named.values()) named.expire();
    this.#named.clear();
  }

  /** A session for one query, with the limits, the client's settings and, last, `readonly`. */
  #freshSession(settings: Readonly<Record<string, string>>, readonly: boolean, releases: (() => void)[]) {
    const session = new this.Session(this.options.dataDir);
    releases.push(() => session.close());
    return { session, setup: run(session, sessionSetup(this.options, settings, readonly)) };
  }

  /**
   * The session a `session_id` names, kept between its requests for its timeout, one request at a time. It keeps
   * the settings it was made with; a request with other settings is refused, since they could not be changed on
   * a read-only session anyway.
   */
  #namedSession(
    params: SessionParams,
    settings: Readonly<Record<string, string>>,
    readonly: boolean,
    releases: (() => void)[],
  ) {
    if (params.id.length === 0 || params.id.length > 256) throw QueryError.of("BAD_ARGUMENTS", "Invalid session_id");
    const key = JSON.stringify({ settings, readonly });
    let named = this.#named.get(params.id);
    if (named === undefined) {
      if (params.check) throw QueryError.of("SESSION_NOT_FOUND", `Session ${params.id} not found`);
      if (this.#named.size >= MAX_SESSIONS) {
        throw QueryError.of("TOO_MANY_SIMULTANEOUS_QUERIES", `Too many sessions. Maximum: ${MAX_SESSIONS}`);
      }
      const session = new this.Session(this.options.dataDir);
      named = new NamedSession(session, key, run(session, sessionSetup(this.options, settings, readonly)), () =>
        this.#named.delete(params.id),
      );
      this.#named.set(params.id, named);
    } else if (named.busy) {
      throw QueryError.of("SESSION_IS_LOCKED", `Session ${params.id} is locked by a concurrent client`);
    } else if (named.key !== key) {
      throw QueryError.of("READONLY", `Session ${params.id} keeps the settings it was opened with`);
    }
    const held = named;
    held.busy = true;
    held.setup.catch(() => held.expire()); // a session that could not be set up is not kept
    releases.push(() => held.done(params.close ? 0 : params.timeoutS));
    return { session: held.session, setup: held.setup };
  }
}

type SessionConstructor = new (path: string) => Session;

/**
 * What a query's session is set to before its first query: the limits and the client's settings, the service's
 * database as the current one, then `readonly`.
 */
function sessionSetup(
  options: QueryEngineOptions,
  settings: Readonly<Record<string, string>>,
  readonly: boolean,
): string {
  const assignments = Object.entries({ ...limitSettings(options), ...settings }).map(
    ([name, value]) => `${name} = ${typeof value === "number" ? value : literal(value)}`,
  );
  return `SET ${assignments.join(", ")}; USE ${identifier(options.database)}${readonly ? "; SET readonly = 1" : ""}`;
}

async function run(session: Session, sql: string): Promise<void> {
  await session.queryAsync(sql, { format: "TSVRaw" });
}

const identifier = (name: string) => `\`${name.replace(/[\\`]/g, (char) => `\\${char}`)}\``;

interface Inspected {
  readonly statement: string;
  /** The statement as the engine formatted it: what runs, one statement and nothing else. */
  readonly formatted: string;
  /** Its FORMAT clause. */
  readonly format: string | undefined;
  /** An INSERT of data (`FORMAT …`): its table, columns and data format. */
  readonly insert: InsertTarget | undefined;
}

interface InsertTarget {
  readonly table: string;
  readonly columns: string[] | undefined;
  readonly format: string;
}

/**
 * The engine parses the text, which must be a single statement (`formatQuery` refuses more), and prints it again,
 * with `param_` values bound into it; the policy then judges the engine's syntax tree of that print, and the
 * print is what runs: what was judged is what runs. An identifier with a line break is refused, because
 * `EXPLAIN AST` prints one node a line.
 */
async function inspect(
  session: Session,
  text: string,
  params: Readonly<Record<string, string>>,
  access: Access,
): Promise<Inspected> {
  let printed = await print(session, text);
  if (printed.formatted.includes("{")) printed = await print(session, bindParams(printed.formatted, params));
  const { line, formatted } = printed;
  if (hasLineBreakInIdentifier(line)) {
    throw QueryError.of("SYNTAX_ERROR", "Identifiers with line breaks are not accepted here");
  }
  const ast = parseAst((await session.queryAsync(`EXPLAIN AST ${formatted}`, { format: "TSVRaw" })).text());
  checkStatement(ast, formatted, access);
  const format = /^FORMAT (\S+)$/m.exec(formatted)?.[1];
  if (ast.type !== "InsertQuery") return { statement: ast.type, formatted, format, insert: undefined };
  const insertFormat = /^INSERT INTO [^\n]* FORMAT (\w+)$/.exec(formatted)?.[1];
  const insert = insertFormat === undefined ? undefined : insertTarget(ast, insertFormat);
  return { statement: ast.type, formatted, format: undefined, insert };
}

/**
 * Whether a quoted identifier in the single-line print holds a line break. The print escapes it (as it does in
 * string literals), but `EXPLAIN AST` prints identifiers and aliases as they are, and one would start a line that
 * reads as a node of its own.
 */
function hasLineBreakInIdentifier(line: string): boolean {
  for (const [token] of line.matchAll(/'(?:[^'\\]|\\[\s\S])*'|`(?:[^`\\]|\\[\s\S])*`/g)) {
    if (token.startsWith("`") && /[\r\n]/.test(unescapeText(token.slice(1, -1)))) return true;
  }
  return /[\r\n]/.test(line);
}

/** The statement as the engine prints it: on one line, and formatted (a clause a line). */
async function print(session: Session, text: string): Promise<{ line: string; formatted: string }> {
  const quoted = literal(text);
  const printed = await session.queryAsync(
    `SELECT formatQuerySingleLine(${quoted}) AS line, formatQuery(${quoted}) AS formatted`,
    { format: "JSONEachRow" },
  );
  return JSON.parse(printed.text()) as { line: string; formatted: string };
}

/** An INSERT's table and columns, from its syntax tree: `Identifier db`, `Identifier table`, `ExpressionList`. */
function insertTarget(ast: AstNode, format: string): InsertTarget {
  const names = ast.children.filter((child) => child.type === "Identifier").map(identifierName);
  const columnList = ast.children.find((child) => child.type === "ExpressionList");
  const columns = columnList?.children.map(identifierName);
  if (ast.children.some((child) => child.type === "Function")) {
    throw QueryError.of("ACCESS_DENIED", `INSERT INTO FUNCTION ${functionName(ast.children[0]!)} is not allowed here`);
  }
  return { table: names.join("."), columns, format };
}

const identifierName = (node: AstNode) => node.label.slice("Identifier ".length);

/** An INSERT with its data: handed to the engine apart from the statement, in one of the formats it streams. */
async function insert(
  session: Session,
  statement: string,
  target: InsertTarget,
  data: Uint8Array,
  release: () => void,
): Promise<RunningQuery> {
  try {
    const summary = await session.insert({
      table: target.table,
      values: data,
      format: target.format as "JSONEachRow",
      ...(target.columns && { columns: target.columns }),
    });
    return finished(statement, summary.rowsWritten);
  } catch (error) {
    if (/Unsupported raw insert format|Invalid (insert|identifier)/.test((error as Error).message)) {
      throw QueryError.of(
        "NOT_IMPLEMENTED",
        "INSERT here takes a plain table name and JSONEachRow, JSONCompactEachRow, CSV(WithNames) or TSV(WithNames) data",
      );
    }
    throw error;
  } finally {
    release();
  }
}

function finished(statement: string, writtenRows: number): RunningQuery {
  return {
    statement,
    format: undefined,
    writtenRows,
    result: { rows: 0, bytes: 0 },
    async *chunks() {},
    close() {},
  };
}

/** A piece of a result, as chDB hands it over. */
interface Chunk {
  raw(): Uint8Array;
  readonly numRows: number;
}

/** Reads the first chunk, so that a query failing at once throws here, before any byte is sent. */
async function started(
  statement: string,
  format: string,
  stream: AsyncIterable<Chunk> | Iterable<Chunk>,
  release: () => void,
): Promise<RunningQuery> {
  const iterator = Symbol.asyncIterator in stream ? stream[Symbol.asyncIterator]() : stream[Symbol.iterator]();
  const result = { rows: 0, bytes: 0 };
  const take = (chunk: Chunk) => {
    const bytes = chunk.raw();
    result.rows += chunk.numRows;
    result.bytes += bytes.byteLength;
    return bytes;
  };
  const next = await iterator.next();
  const first = next.done ? undefined : take(next.value);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    release();
  };
  // an answer held whole (not streamed) needs nothing more of its session
  if (first === undefined || !(Symbol.asyncIterator in stream)) close();
  return {
    statement,
    format,
    writtenRows: 0,
    result,
    async *chunks() {
      try {
        if (first === undefined) return;
        yield first;
        for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield take(next.value);
      } catch (error) {
        throw QueryError.fromEngine(error);
      } finally {
        close();
      }
    },
    close,
  };
}

/** A named session and its state between requests. */
class NamedSession {
  busy = false;
  #timer: Timer | undefined;
  #expired = false;

  constructor(
    readonly session: Session,
    readonly key: string,
    readonly setup: Promise<void>,
    private readonly forget: () => void,
  ) {}

  /** The request is over: closed now (timeout 0), or kept for `timeoutS` more. */
  done(timeoutS: number): void {
    this.busy = false;
    clearTimeout(this.#timer);
    if (this.#expired) return;
    if (timeoutS === 0) this.expire();
    else this.#timer = setTimeout(() => this.expire(), timeoutS * 1000);
  }

  /** Closed and forgotten, once: a later request with its id gets a new session. */
  expire(): void {
    clearTimeout(this.#timer);
    if (this.#expired) return;
    this.#expired = true;
    this.forget();
    this.session.close();
  }
}

/** `QUERY_CONCURRENCY` places; a query waits for one up to `waitMs`, as with ClickHouse's `queue_max_wait_ms`. */
class Places {
  #taken = 0;
  /** Each waiter is told whether it got a place (a freed one is handed over directly) or waited too long. */
  readonly #waiting: ((given: boolean) => void)[] = [];

  constructor(
    private readonly size: number,
    private readonly waitMs: number,
  ) {}

  get taken(): number {
    return this.#taken;
  }

  async take(): Promise<() => void> {
    if (this.#taken < this.size) this.#taken++;
    else if (!(await this.#wait())) throw tooMany(this.size);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const next = this.#waiting.shift();
      if (next) next(true);
      else this.#taken--;
    };
  }

  #wait(): Promise<boolean> {
    if (this.#waiting.length >= MAX_WAITING) return Promise.resolve(false);
    const { promise, resolve } = Promise.withResolvers<boolean>();
    const timer = setTimeout(() => {
      this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
      resolve(false);
    }, this.waitMs);
    const waiter = (given: boolean) => {
      clearTimeout(timer);
      resolve(given);
    };
    this.#waiting.push(waiter);
    return promise;
  }
}

const tooMany = (size: number) =>
  QueryError.of("TOO_MANY_SIMULTANEOUS_QUERIES", `Too many simultaneous queries. Maximum: ${size}`);
