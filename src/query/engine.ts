import { openEmbeddedEngine, type SessionConstructor } from "../engine";
import { quoteIdentifier } from "../storage";
import { bindValuesRows } from "./bind";
import { execute } from "./calls";
import { type Catalogue, readCatalogue } from "./catalogue";
import { QueryError } from "./errors";
import { checkFilters, sqlValuedSettings } from "./filters";
import { createInsertDir, insertData, insertDir } from "./insert";
import { checkDatabase, inspect } from "./inspect";
import { type LoggedQuery, QueryLog } from "./log";
import { boundMutations } from "./mutations";
import type { QueryEngineOptions } from "./options";
import type { SessionParams } from "./params";
import type { Access } from "./policy";
import { type RunningQuery, runStatement } from "./running";
import { Places } from "./sessions";
import { checkSettings, MAX_QUERY_BYTES } from "./settings";
import { finishSetup, QuerySessions, type Releases } from "./setup";
import { queryText, splitInsert } from "./statement";
import { createPortTables, QUERY_LOG } from "./views";

/** One query, as the HTTP layer hands it over. */
interface QueryRequest {
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

/**
 * The query port's access to the embedded engine: a query checked, run on a session of its own (setup.ts) in one
 * of `QUERY_CONCURRENCY` places, and its output handed over as it comes (running.ts). See
 * docs/query.md#how-a-query-runs.
 */
export class QueryEngine {
  readonly #places: Places;
  readonly #sessions: QuerySessions;
  /** Where an INSERT's data waits for the engine to read it (`FROM INFILE`), a file a request. */
  readonly #insertDir: string;
  /** The IDs of the queries running now. */
  readonly #queryIds = new Set<string>();

  private constructor(
    private readonly Session: SessionConstructor,
    private readonly options: QueryEngineOptions,
    private readonly catalogue: Catalogue,
    private readonly log: QueryLog,
  ) {
    this.#places = new Places(options.concurrency, options.queueWaitMs);
    this.#sessions = new QuerySessions(Session, options);
    this.#insertDir = insertDir(options.dataDir);
  }

  /** Opens the embedded engine on the data directory (unpacking it first in the compiled executable). */
  static async open(options: QueryEngineOptions): Promise<QueryEngine> {
    const Session = await openEmbeddedEngine(options.dataDir, options.nativeCacheDir);
    const probe = new Session(options.dataDir);
    try {
      const catalogue = await readCatalogue(probe);
      await createPortTables(probe);
      if (!options.readonly) createInsertDir(options.dataDir);
      const log = new Session(options.dataDir);
      // below the port's queries (2), so that its writes are neither in the port's view of processes nor in a query's way
      await log.queryAsync("SET priority = 3");
      return new QueryEngine(Session, options, catalogue, new QueryLog(log, QUERY_LOG));
    } finally {
      probe.close();
    }
  }

  /** The engine's time zone, for `X-ClickHouse-Timezone`. */
  get timezone(): string {
    return this.catalogue.timezone;
  }

  /** The service's database: a query's current one unless it names another. */
  get database(): string {
    return this.options.database;
  }

  /** Queries running now. */
  get running(): number {
    return this.#places.taken;
  }

  /**
   * Claims a query's ID for as long as it runs, as a server's process list does: a second query with the ID of one
   * still running is refused. Returns what frees it.
   */
  claimQueryId(id: string): () => void {
    if (this.#queryIds.has(id)) {
      throw QueryError.of("QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING", `Query with id = ${id} is already running`);
    }
    this.#queryIds.add(id);
    return () => this.#queryIds.delete(id);
  }

  /** Starts a query: checks it, runs it, and reads its first chunk of output. Throws a `QueryError`. */
  async run(request: QueryRequest): Promise<RunningQuery> {
    const readonly = request.access === "read";
    const { settingTypes } = this.catalogue;
    checkSettings(request.settings, this.options, settingTypes, readonly);
    const sqlSettings = sqlValuedSettings(request.settings, request.session);
    const releases: Releases = [];
    const release = () => {
      for (const step of releases.splice(0).reverse()) step();
    };
    try {
      releases.push(await this.#places.take());
      const { session: s, setup } = this.#sessions.open(request.session, request.settings, readonly, releases);
      await setup;
      const { access, params } = request;
      const database = this.options.database;
      if (request.database !== undefined && request.database !== database) {
        await checkDatabase(s, request.database, access, database);
        await execute(s, `USE ${quoteIdentifier(request.database)}`);
      }
      const inline = readonly ? undefined : splitInsert(request.query, request.body, MAX_QUERY_BYTES);
      const text = inline?.statement ?? queryText(request.query, request.body);
      // its SETTINGS clause's settings, each checked as URL settings are; finishSetup sets them before readonly
      const clause: [string, string][] = [];
      const checkSetting = (name: string, value: string) => {
        checkSettings({ [name]: value }, this.options, settingTypes, readonly);
        clause.push([name, value]);
      };
      const isQuerySetting = (name: string) => settingTypes.has(name);
      const inspected = await inspect(s, { text, params, access, database, checkSetting, isQuerySetting });
      await checkFilters(s, [...sqlSettings, ...clause], database);
      if (request.session === undefined) await finishSetup(s, [...clause, ...sqlSettings], readonly);
      if (inline !== undefined && inspected.statement === "InsertQuery") {
        const format = / FORMAT (\S+)$/.exec(inspected.line)?.[1] ?? "";
        return await insertData(s, this.#insertDir, inspected, bindValuesRows(format, inline.data, params), release);
      }
      const chosen = inspected.format ?? request.defaultFormat ?? "TabSeparated";
      const format = this.catalogue.formats.get(chosen.toLowerCase()) ?? chosen;
      const run = () => runStatement(s, inspected, format, this.options.timeoutS, release, releases);
      if (readonly || inspected.target === undefined) return await run();
      return await boundMutations(inspected.target, () => new this.Session(this.options.dataDir), run);
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
    this.#sessions.closeAll();
    await this.log.close();
  }
}
