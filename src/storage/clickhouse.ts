import { mkdirSync } from "node:fs";
import { type ClickHouseClient, type ClickHouseClientConfigOptions, createClient } from "@clickhouse/client";
import { type ClickHouseConfig, OperatorError } from "../config";
import { type EngineOpenOptions, incompleteRestore, openEmbeddedEngine } from "../engine";
import { chunkByBytes, literalList, tableName } from "./sql";

/**
 * How the identity tables are replicated where `db` writes, which decides how a flush sees every write acknowledged
 * before it (docs/scale-out.md#clusters): `none` on one plain server or embedded; `replicated` on a cluster, or over
 * a `Replicated` database's engines; `shared` on ClickHouse Cloud's shared engines.
 */
export type Replication = "none" | "replicated" | "shared";

/** What each insert carries, by table, and how the identity tables are replicated. */
export interface Consistency {
  readonly replication: Replication;
  readonly insertSettings: Readonly<Record<string, ClickHouseSettings>>;
}

/** How long an identity insert waits for its quorum: well within an SDK's request timeout (posthog-node's 10 s). */
export const QUORUM_TIMEOUT_MS = 5_000;

/** ClickHouse settings, by name. */
export type ClickHouseSettings = Readonly<Record<string, number | string>>;

/**
 * - Every table here collapses rows by key (Replacing- and AggregatingMergeTree), and every read collapses them again
 *   (FINAL, argMax, the -Merge combinators), since rows of separate inserts are only collapsed by merges anyway. So
 *   an insert need not collapse its own rows first, which saves time (docs/architecture.md#inserts).
 * - `events.properties_typed` reads a key with a dot as a path, so `{"a.b": 1, "a": {"b": 2}}` names one path
 *   twice: the first is kept, where the engine would refuse the row (a 500 the client retries forever).
 * - A JSON object given for a String column is stored as its text, exactly as written (the default of recent
 *   versions, pinned): a row may carry an object (an event's properties) rather than its JSON as a string, which
 *   would be escaped once more to write and unescaped again to read (docs/architecture.md#inserts).
 *
 * A server takes them with each insert (URL parameters, free). chDB's connection would prefix every insert with a
 * `SET` statement, and its one session keeps a `SET`, so the embedded engine gets them once.
 */
const INSERT_SETTINGS = {
  optimize_on_insert: 0,
  type_json_skip_duplicated_paths: 1,
  input_format_json_read_objects_as_strings: 1,
} as const;

/**
 * The embedded engine's write path runs its queries at priority 1 and the query port its queries at 2: the engine
 * suspends a lower-priority query while a higher one runs, so a query on the port yields the cores to a flush
 * (docs/query.md#how-a-query-runs). 0 would mean no priority at all.
 */
export const WRITE_PATH_PRIORITY = 1;
const WRITE_PATH_SETTINGS = { priority: WRITE_PATH_PRIORITY } as const;

/**
 * The one handle on ClickHouse: the same @clickhouse/client code over HTTP to a server, or over chDB
 * in this process. Tables are always named with their database, so nothing depends on a session default.
 */
export class ClickHouse {
  /** What each insert sets itself: nothing embedded, where the session holds `INSERT_SETTINGS` already. */
  readonly #insertSettings: ClickHouseSettings;
  /** What inserts into a table add where the tables are replicated (`setConsistency`). */
  #tableSettings: Readonly<Record<string, ClickHouseSettings>> = {};
  #replication: Replication = "none";

  private constructor(
    private readonly client: ClickHouseClient,
    readonly database: string,
    readonly backend: ClickHouseConfig["kind"],
    /** The cluster whose nodes share the tables (`CLICKHOUSE_CLUSTER`), if any. */
    readonly cluster?: string,
  ) {
    this.#insertSettings = backend === "server" ? INSERT_SETTINGS : {};
  }

  /**
   * Connects; chDB is loaded only here, in embedded mode, so a server deployment never loads the native engine.
   * `engine` is what backup and restore ask of the embedded engine (engine/open.ts).
   */
  static async connect(config: ClickHouseConfig, engine: EngineOpenOptions = {}): Promise<ClickHouse> {
    if (config.kind === "server") {
      const client = createClient({ url: config.url, username: config.user, password: config.password });
      return new ClickHouse(client, config.database, "server", config.cluster);
    }
    // refused here, before the directory is touched, as the operator's error (one sentence, not a stack)
    const incomplete = engine.restoring ? undefined : incompleteRestore(config.dataDir);
    if (incomplete !== undefined) throw new OperatorError(incomplete);
    // chDB binds one data directory per process; connections to the same directory share the engine.
    mkdirSync(config.dataDir, { recursive: true });
    // The client declares the Connection contract from its own bundled copy of client-common, chDB from the
    // package; they are the same shape but TypeScript tells the copies apart.
    await openEmbeddedEngine(config.dataDir, config.nativeCacheDir, engine);
    const { createChdbConnection } = await import("chdb/connection");
    const connection = createChdbConnection({ path: config.dataDir }) as unknown as NonNullable<
      ClickHouseClientConfigOptions["connection"]
    >;
    const client = createClient({ connection });
    for (const [name, value] of Object.entries({ ...INSERT_SETTINGS, ...WRITE_PATH_SETTINGS }))
      await client.command({ query: `SET ${name} = ${value}` });
    return new ClickHouse(client, config.database, "embedded");
  }

  /** `database`.`name`, quoted. */
  table(name: string): string {
    return tableName(this.database, name);
  }

  /** Runs a statement; `settings` apply to it alone, as for `rows`. */
  async command(query: string, settings: ClickHouseSettings = {}): Promise<void> {
    const entries = Object.entries(settings);
    await this.#settled(() =>
      this.backend === "embedded" && entries.length > 0
        ? this.client.command({ query: `${query} SETTINGS ${entries.map(([n, v]) => `${n} = ${v}`).join(", ")}` })
        : this.client.command({ query, clickhouse_settings: settings }),
    );
  }

  /**
   * The rows of a query whose values are written into it as literals (`sql.ts`): nothing is bound. `settings` apply
   * to this query alone: a `SETTINGS` clause embedded (where the client would `SET` them on the one session for
   * good), URL parameters on a server (which may refuse a clause that changes settings, as the query port does).
   */
  async rows<Row>(query: string, settings: ClickHouseSettings = {}): Promise<Row[]> {
    const entries = Object.entries(settings);
    // Cloud's shared engines: a read sees every write acknowledged before it
    const consistent = this.#replication === "shared" ? { ...settings, select_sequential_consistency: 1 } : settings;
    return await this.#settled(async () => {
      const result =
        this.backend === "embedded" && entries.length > 0
          ? await this.client.query({
              query: `${query} SETTINGS ${entries.map(([name, value]) => `${name} = ${value}`).join(", ")}`,
              format: "JSONEachRow",
            })
          : await this.client.query({ query, format: "JSONEachRow", clickhouse_settings: consistent });
      return await result.json<Row>();
    });
  }

  /**
   * Runs the query `queryFor` makes of each chunk of `values`, given as a list of literals for `IN`, and joins
   * the rows.
   */
  async rowsIn<Row>(values: readonly string[], queryFor: (list: string) => string): Promise<Row[]> {
    const rows: Row[] = [];
    // a row at a time: a spread of a million arguments overflows the stack
    for (const chunk of chunkByBytes(values))
      for (const row of await this.rows<Row>(queryFor(literalList(chunk)))) rows.push(row);
    return rows;
  }

  /**
   * Inserts rows (objects of one shape, as the row builders make them) as JSONCompactEachRow: arrays in the order
   * of the first row's columns, named once. ClickHouse parses that faster than an object a row (no key to match
   * per field; docs/architecture.md#inserts). Embedded, the rows are encoded in one `JSON.stringify` of them all,
   * separated by commas (which the format takes between rows), and handed to the engine with the statement: the
   * client would encode them a row at a time, join them and copy the text into the statement again.
   */
  async insert<Row extends object>(table: string, rows: readonly Row[]): Promise<void> {
    if (rows.length === 0) return;
    const columns = Object.keys(rows[0]!) as [keyof Row & string, ...(keyof Row & string)[]];
    const values = rows.map((row) => columns.map((column) => row[column]));
    const clickhouse_settings = { ...this.#insertSettings, ...this.#tableSettings[table] };
    const inserted =
      this.backend === "embedded"
        ? () =>
            this.client.command({
              query: `INSERT INTO ${this.table(table)} (${columns.join(", ")}) FORMAT JSONCompactEachRow\n${JSON.stringify(values).slice(1, -1)}`,
              clickhouse_settings,
            })
        : () =>
            this.client.insert({
              table: this.table(table),
              values,
              format: "JSONCompactEachRow",
              columns,
              clickhouse_settings,
            });
    await this.#settled(() =>
      inserted().catch((error: unknown) => {
        if (typeof error === "object" && error !== null) failedInserts.set(error, table);
        throw error;
      }),
    );
  }

  /** Set at startup: what every later insert into a table carries, and how the tables are replicated. */
  setConsistency({ insertSettings, replication }: Consistency): void {
    this.#tableSettings = insertSettings;
    this.#replication = replication;
  }

  /**
   * Waits until this node holds every write to `tables` acknowledged before the call, so that what is read next
   * is derived from all of it: on replicated tables, each replica catches up with its log (`SYSTEM SYNC REPLICA
   * … LIGHTWEIGHT`, within `QUORUM_TIMEOUT_MS`: a replica that cannot fails the flush, which a retry repeats).
   * Shared engines' reads are consistent already; one server has nothing to wait for.
   */
  async catchUp(tables: readonly string[]): Promise<void> {
    if (this.#replication !== "replicated") return;
    await Promise.all(
      tables.map((table) =>
        this.client.command({
          query: `SYSTEM SYNC REPLICA ${this.table(table)} LIGHTWEIGHT`,
          clickhouse_settings: { receive_timeout: QUORUM_TIMEOUT_MS / 1000 },
        }),
      ),
    );
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /**
   * Runs `work`; embedded, a query that fails stays in the engine's process list, as if still running, until the
   * session's next query (chDB 3.4), and there at the write path's priority it holds every query on the port
   * (priority 2) suspended about a second at each check: after a failed flush each query on the port took 5 s. So
   * the session runs an empty query at once after a failure.
   */
  async #settled<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (this.backend === "embedded") await this.client.command({ query: "SELECT 1" }).catch(() => {});
      throw error;
    }
  }
}

/**
 * Whether ClickHouse refused a write for what it contained (a value it cannot parse or store), so that other
 * requests' rows in the same insert may be fine, rather than for its own condition (disk full, unreachable,
 * overloaded, a table missing), which fails every request alike. An error that is neither a ClickHouse error
 * nor a network error was thrown by this service's own code on this data, and counts as the data's.
 */
export function isDataError(error: unknown): boolean {
  const type = (error as { type?: unknown } | null)?.type;
  if (typeof type === "string") return DATA_ERROR_TYPES.test(type);
  return !isNetworkError(error);
}

/** What a table refused, for the operator: the table (when an insert into it failed) and ClickHouse's error. */
export interface Refusal {
  readonly table: string | undefined;
  readonly type: string;
  readonly code: string | undefined;
}

/** The table each failed insert wrote, by its error. */
const failedInserts = new WeakMap<object, string>();

/**
 * Whether ClickHouse refused a write for what a table is rather than for what the write held or the server's
 * condition: a constraint, a column missing or of another type, a table or database missing, an expression of the
 * table that throws (a default, a TTL, an index), a table read-only. Only an operator can fix that, and until then
 * every write of the service fails alike (docs/behaviour.md#when-the-database-refuses-the-events).
 */
export function refusalOf(error: unknown): Refusal | undefined {
  const { type, code } = (error ?? {}) as { type?: unknown; code?: unknown };
  if (typeof type !== "string" || !REFUSAL_TYPES.test(type)) return undefined;
  const table = typeof error === "object" && error !== null ? failedInserts.get(error) : undefined;
  return { table, type, code: typeof code === "string" ? code : undefined };
}

const REFUSAL_TYPES =
  /^(VIOLATED_CONSTRAINT|NO_SUCH_COLUMN_IN_TABLE|THERE_IS_NO_COLUMN|NOT_FOUND_COLUMN_IN_BLOCK|UNKNOWN_IDENTIFIER|TYPE_MISMATCH|UNKNOWN_TABLE|UNKNOWN_DATABASE|FUNCTION_THROW_IF_VALUE_IS_NON_ZERO|TABLE_IS_READ_ONLY)$/;

const DATA_ERROR_TYPES =
  /^(CANNOT_PARSE_|CANNOT_READ_|INCORRECT_DATA|TYPE_MISMATCH|TOO_LARGE_STRING_SIZE|CANNOT_CONVERT_TYPE|VALUE_IS_OUT_OF_RANGE|ILLEGAL_COLUMN|ILLEGAL_TYPE_OF_ARGUMENT|CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN|INCORRECT_NUMBER_OF_COLUMNS|INCORRECT_JSON)/;

function isNetworkError(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (
    (typeof code === "string" && /^E[A-Z]+$/.test(code)) ||
    (typeof message === "string" && /timeout|socket hang up|ECONN|fetch failed/i.test(message))
  );
}
