import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Session } from "chdb";
import type { Config } from "../config";
import { openEmbeddedEngine, type SessionConstructor } from "../engine";
import { literal } from "../storage";
import { QueryError } from "./errors";
import { framingOf, withoutRepeatedHeaders } from "./formats";
import { checkDatabase, createPortTables, type Inspected, inspect, QUERY_LOG } from "./inspect";
import { type LoggedQuery, QueryLog } from "./log";
import type { SessionParams } from "./params";
import type { Access } from "./policy";
import { NamedSession, NamedSessions, Places } from "./sessions";
import {
  checkSettings,
  limitSettings,
  MAX_QUERY_BYTES,
  type QueryLimits,
  type SettingTypes,
  SQL_VALUED,
} from "./settings";
import { queryText, splitInsert } from "./statement";

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
  /** The `query` parameter. */
  readonly query: string;
  /** The request's body, inflated: the rest of the query, or an INSERT's data. */
  readonly body: Uint8Array;
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
const QUEUE_WAIT_MS = 10_000;
/**
 * How long past `QUERY_TIMEOUT_S` a query may hold its place: a client that stops reading its result leaves the
 * query paused, out of reach of the engine's own timeout, so the port ends it then.
 */
export const HOLD_GRACE_S = 5;

/**
 * The query port's access to the embedded engine. Every query runs on a session of its own (a named one for
 * `session_id`), never the write path's: chDB runs one query at a time per session, and sessions on one data
 * directory run in parallel, so a query never holds up a flush. A session starts with the port's limits and
 * the client's settings, then `readonly = 1` (unless writes are allowed), after which the engine itself refuses
 * every change of them. See docs/query.md#how-a-query-runs.
 */
export class QueryEngine {
  readonly #places: Places;
  readonly #named = new NamedSessions();
  /** Where an INSERT's data waits for the engine to read it (`FROM INFILE`), a file a request. */
  readonly #insertDir: string;

  private constructor(
    private readonly Session: SessionConstructor,
    private readonly options: QueryEngineOptions,
    /** The engine's time zone, for `X-ClickHouse-Timezone`. */
    readonly timezone: string,
    private readonly settingTypes: SettingTypes,
    /** The engine's output formats by their names in lower case (a client's `default_format=arrow`). */
    private readonly formats: ReadonlyMap<string, string>,
    private readonly log: QueryLog,
  ) {
    this.#places = new Places(options.concurrency, options.queueWaitMs);
    this.#insertDir = insertDir(options.dataDir);
  }

  /** Opens the embedded engine on the data directory (unpacking it first in the compiled executable). */
  static async open(options: QueryEngineOptions): Promise<QueryEngine> {
    const Session = await openEmbeddedEngine(options.dataDir, options.nativeCacheDir);
    const probe = new Session(options.dataDir);
    try {
      const [[timezone = "UTC"] = []] = await rows(probe, "SELECT timezone()");
      const types = (await rows(probe, "SELECT name, type FROM system.settings")) as [string, string][];
      const formats = (await rows(probe, "SELECT name FROM system.formats WHERE is_output")).map(([name]) => name!);
      await createPortTables(probe);
      if (!options.readonly) mkdirSync(insertDir(options.dataDir), { recursive: true, mode: 0o700 });
      const byLowerCase = new Map(formats.map((name) => [name.toLowerCase(), name]));
      const log = new Session(options.dataDir);
      // below the port's queries (2), so that its writes are neither in the port's view of processes nor in a query's way
      await log.queryAsync("SET priority = 3");
      return new QueryEngine(Session, options, timezone, new Map(types), byLowerCase, new QueryLog(log, QUERY_LOG));
    } finally {
      probe.close();
    }
  }

  /** The service's database: a query's current one unless it names another. */
  get database(): string {
    return this.options.database;
  }

  /** Queries running now. */
  get running(): number {
    return this.#places.taken;
  }

  /** Starts a query: checks it, runs it, and reads its first chunk of output. Throws a `QueryError`. */
  async run(request: QueryRequest): Promise<RunningQuery> {
    const readonly = request.access === "read";
    checkSettings(request.settings, this.options, this.settingTypes, readonly);
    // SQL-valued settings are set only once checked, just before the statement runs: on the session before, they
    // would filter the port's own queries (the catalogue it checks against among them)
    const sqlSettings = Object.entries(request.settings).filter(([name]) => SQL_VALUED.has(name));
    if (sqlSettings.length > 0 && request.session !== undefined) {
      throw QueryError.of("READONLY", `${sqlSettings[0]![0]} cannot be set on a named session here`);
    }
    const releases: (() => void)[] = [];
    const release = () => {
      for (const step of releases.splice(0).reverse()) step();
    };
    try {
      releases.push(await this.#places.take());
      // A session of its own becomes read-only once the statement is checked, so that the settings of its SETTINGS
      // clause (checked as URL settings are) can be set first; a named one is read-only from its start.
      const session = request.session
        ? this.#namedSession(request.session, request.settings, readonly, releases)
        : this.#freshSession(request.settings, releases);
      const { session: s, setup } = session;
      await setup;
      const { access, params } = request;
      const database = this.options.database;
      if (request.database !== undefined && request.database !== database) {
        await checkDatabase(s, request.database, access, database);
        await run(s, `USE ${identifier(request.database)}`);
      }
      const inline = readonly ? undefined : splitInsert(request.query, request.body, MAX_QUERY_BYTES);
      const text = inline?.statement ?? queryText(request.query, request.body);
      const clause: [string, string][] = [];
      const checkSetting = (name: string, value: string) => {
        checkSettings({ [name]: value }, this.options, this.settingTypes, readonly);
        clause.push([name, value]);
      };
      const isQuerySetting = (name: string) => this.settingTypes.has(name);
      const inspected = await inspect(s, { text, params, access, database, checkSetting, isQuerySetting });
      await this.#checkSqlSettings([...sqlSettings, ...clause], s);
      if (request.session === undefined) {
        const finish = [...clause, ...sqlSettings].map(([name, value]) => `SET ${name} = ${literal(value)}`);
        if (readonly) finish.push("SET readonly = 1");
        if (finish.length > 0) await run(s, finish.join("; "));
      }
      if (inline !== undefined && inspected.statement === "InsertQuery") {
        return await this.#insert(s, inspected, inline.data, release);
      }
      const chosen = inspected.format ?? request.defaultFormat ?? "TabSeparated";
      const format = this.formats.get(chosen.toLowerCase()) ?? chosen;
      const held = { expired: false };
      const deadline = setTimeout(
        () => {
          held.expired = true;
          release();
        },
        (this.options.timeoutS + HOLD_GRACE_S) * 1000,
      );
      releases.push(() => clearTimeout(deadline));
      const framing = framingOf(format);
      if (!STREAMED.has(inspected.statement) || framing.kind === "whole") {
        // chDB streams SELECTs only; the others (SHOW, DESCRIBE, EXPLAIN, DDL) answer little, all at once; and a
        // format that is one document over the whole result is formatted once (formats.ts)
        const result = await s.queryAsync(inspected.formatted, { format });
        return await started(
          inspected.statement,
          format,
          [{ raw: () => result.bytes(), numRows: result.rowsRead }],
          release,
          held,
        );
      }
      const stream = s.queryStream(inspected.formatted, { format });
      releases.push(() => stream.cancel());
      const shape = framing.kind === "header" ? withoutRepeatedHeaders(framing.header) : undefined;
      return await started(inspected.statement, format, stream, release, held, shape);
    } catch (error) {
      release();
      throw error instanceof QueryError ? error : QueryError.fromEngine(error);
    }
  }

  /** Records an answered query in the port's `system.query_log`. */
  record(query: LoggedQuery): void {
    this.log.record(query);
  }

  /** Closes the named sessions (queries still running close theirs when they end) and writes the log's last rows. */
  async close(): Promise<void> {
    this.#named.closeAll();
    await this.log.close();
  }

  /**
   * The SQL of `additional_table_filters` and `additional_result_filter` put through the policy as the WHERE of a
   * query, each filter alone: what the engine will add to the query is what was checked. On a session that has
   * none of them set.
   */
  async #checkSqlSettings(settings: readonly [string, string][], s: Session): Promise<void> {
    const refuse = (name: string) => () => {
      throw QueryError.of("READONLY", `A filter of ${name} may not change settings`);
    };
    for (const [name, value] of settings.filter(([setting]) => SQL_VALUED.has(setting))) {
      const filters = name === "additional_result_filter" ? [value] : await mapValues(s, value);
      for (const filter of filters) {
        await inspect(s, {
          text: `SELECT 1 WHERE ${filter}`,
          params: {},
          access: "read",
          database: this.options.database,
          checkSetting: refuse(name),
          isQuerySetting: () => true,
        });
      }
    }
  }

  /**
   * An INSERT with its data: the data is written to a file of the port's own and the engine reads it from there
   * (`FROM INFILE`, which the policy refuses in a client's statement), so that any input format the engine knows
   * works, binary ones included, and `VALUES` rows are read as data, not as SQL.
   */
  async #insert(session: Session, inspected: Inspected, data: Uint8Array, release: () => void) {
    const path = join(this.#insertDir, crypto.randomUUID());
    try {
      await Bun.write(path, data);
      const [, target, format] = /^([\s\S]*) FORMAT (\S+)$/.exec(inspected.line) ?? [];
      if (target === undefined) throw QueryError.of("SYNTAX_ERROR", "An INSERT with data needs a FORMAT");
      const result = await session.queryAsync(
        `${target} FROM INFILE ${literal(path)} COMPRESSION 'none' FORMAT ${format}`,
        { format: "TSVRaw" },
      );
      return finished(inspected.statement, result.rowsRead);
    } catch (error) {
      // the engine names the file it read: the body it came from, to the client
      const engineError = error instanceof QueryError ? error : QueryError.fromEngine(error);
      const text = engineError.text.replaceAll(path, "(the request body)");
      throw new QueryError(engineError.code, engineError.type, text);
    } finally {
      rmSync(path, { force: true });
      release();
    }
  }

  /** A session for one query, with the limits and the client's settings; `run` makes it read-only where it must be. */
  #freshSession(settings: Readonly<Record<string, string>>, releases: (() => void)[]) {
    const session = new this.Session(this.options.dataDir);
    releases.push(() => session.close());
    return { session, setup: run(session, sessionSetup(this.options, settings, false)) };
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
      named = this.#named.add(params.id, (forget) => {
        const session = new this.Session(this.options.dataDir);
        return new NamedSession(session, key, run(session, sessionSetup(this.options, settings, readonly)), forget);
      });
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

/**
 * What a query's session is set to before its first query: the limits and the client's settings, the service's
 * database as the current one, then `readonly`.
 */
function sessionSetup(
  options: QueryEngineOptions,
  settings: Readonly<Record<string, string>>,
  readonly: boolean,
): string {
  // readonly comes last; SQL-valued settings only once checked, just before the statement runs (run)
  const chosen = Object.entries(settings).filter(([name]) => name !== "readonly" && !SQL_VALUED.has(name));
  const assignments = [...Object.entries(limitSettings(options)), ...chosen].map(
    ([name, value]) => `${name} = ${typeof value === "number" ? value : literal(value)}`,
  );
  return `SET ${assignments.join(", ")}; USE ${identifier(options.database)}${readonly ? "; SET readonly = 1" : ""}`;
}

/** The values of a `Map(String, String)` in its text form, as the engine reads it. */
async function mapValues(session: Session, text: string): Promise<string[]> {
  const sql = `SELECT arrayJoin(mapValues(m)) FROM format(TSV, 'm Map(String, String)', ${literal(text)})`;
  return (await rows(session, sql)).map(([value]) => value!);
}

/** A query's rows, each an array of its values. */
async function rows(session: Session, sql: string): Promise<string[][]> {
  const text = (await session.queryAsync(sql, { format: "JSONCompactEachRow" })).text().trim();
  return text === "" ? [] : text.split("\n").map((line) => JSON.parse(line) as string[]);
}

/** Where INSERT data waits in a file of the port's own for the engine to read it. */
const insertDir = (dataDir: string) => join(dataDir, "query-inserts");

async function run(session: Session, sql: string): Promise<void> {
  await session.queryAsync(sql, { format: "TSVRaw" });
}

const identifier = (name: string) => `\`${name.replace(/[\\`]/g, (char) => `\\${char}`)}\``;

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

const heldTooLong = () =>
  QueryError.of("TIMEOUT_EXCEEDED", "Timeout exceeded: the result was not read within the query's time limit");

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
  held: { readonly expired: boolean },
  /** What each block's output becomes before it is sent (a repeated header dropped). */
  shape: (block: Uint8Array) => Uint8Array = (block) => block,
): Promise<RunningQuery> {
  const iterator = Symbol.asyncIterator in stream ? stream[Symbol.asyncIterator]() : stream[Symbol.iterator]();
  const result = { rows: 0, bytes: 0 };
  const take = (chunk: Chunk) => {
    const bytes = shape(chunk.raw());
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
        if (held.expired) throw heldTooLong();
      } catch (error) {
        throw held.expired ? heldTooLong() : QueryError.fromEngine(error);
      } finally {
        close();
      }
    },
    close,
  };
}
