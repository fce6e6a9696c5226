import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { scratchDir } from "../helpers/scratch";
import { startService, type TestService } from "../helpers/service";

// Nothing outside the database, whatever the door: every table function, table engine, disk type and dictionary
// source the engine knows (listed from its own system tables), in every clause position, through the URL, headers,
// a session's SET and a SETTINGS clause. A refusal's status is not the test; what is watched outside is: a canary
// file whose text must never appear in an answer, a directory that must stay empty, and loopback listeners that
// must get no connection.

const embedded = !process.env.CLICKHOUSE_URL;
const PASSWORD = `pw-${crypto.randomUUID()}`;
const CANARY = `canary-${crypto.randomUUID()}`;

/** What an attack must never reach, and how to tell that it did not. */
class Outside {
  readonly canaryDir = scratchDir("ingest-canary-");
  readonly canary = join(this.canaryDir, "canary.csv");
  /** A directory every write is aimed at: it must stay empty. */
  readonly watched = scratchDir("ingest-watched-");
  readonly hits = { http: 0, tcp: 0 };
  readonly #http = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => {
      this.hits.http++;
      return new Response(`${CANARY},1\n`);
    },
  });
  readonly #tcp = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open: (socket) => {
        this.hits.tcp++;
        socket.end();
      },
      data: () => {},
    },
  });
  readonly url = `http://127.0.0.1:${this.#http.port}/data.csv`;
  readonly address = `127.0.0.1:${this.#tcp.port}`;

  constructor() {
    writeFileSync(this.canary, `${CANARY},1\n`);
  }

  /** Whether an answer shows anything it must not: the canary, a system file, the service's secrets. */
  leaks(text: string): boolean {
    // the canary, /etc/passwd, the port's password, the process's environment, a file of the working directory
    return [CANARY, "root:x:0:0", PASSWORD, "PATH=/", '"name": "ingest"'].some((secret) => text.includes(secret));
  }

  /** What must hold after every attack: also the folder the engine's file paths point at stays empty. */
  untouched(dataDir?: string): void {
    expect(this.hits).toEqual({ http: 0, tcp: 0 });
    expect(readdirSync(this.watched)).toEqual([]);
    if (dataDir !== undefined) expect(readdirSync(join(dataDir, "empty"))).toEqual([]);
    expect(readdirSync(this.canaryDir)).toEqual(["canary.csv"]);
    expect(readFileSync(this.canary, "utf8")).toBe(`${CANARY},1\n`);
  }

  stop(): void {
    this.#http.stop(true);
    this.#tcp.stop(true);
  }
}

/** One attack: a statement and the door it comes through. */
interface Attack {
  readonly sql: string;
  /** URL parameters, added to the request's. */
  readonly search?: Record<string, string>;
  readonly headers?: Record<string, string>;
  /** Sent as a GET (`query=`) rather than a POST body. */
  readonly get?: boolean;
  /** Run in a named session after `SET`s of these settings. */
  readonly sessionSet?: string;
  /** The answer, where the attack is a question the port answers truthfully (no such table) rather than refuses. */
  readonly answer?: string;
}

describe.skipIf(!embedded)("the query port reaches nothing outside the database", () => {
  const outside = new Outside();
  let readOnly: TestService;
  let writable: TestService;
  let catalogue: { functions: string[]; engines: string[]; disks: string[]; sources: string[] };

  beforeAll(async () => {
    readOnly = await startService({ QUERY_PORT: "0", QUERY_PASSWORD: PASSWORD });
    writable = await startService({ QUERY_PORT: "0", QUERY_PASSWORD: PASSWORD, QUERY_READONLY: "0" });
    const names = async (sql: string) => (await readOnly.db.rows<{ name: string }>(sql)).map((row) => row.name);
    catalogue = {
      functions: await names("SELECT name FROM system.table_functions ORDER BY name"),
      engines: await names("SELECT name FROM system.table_engines ORDER BY name"),
      disks: await names("SELECT name FROM system.disk_types ORDER BY name"),
      sources: await names("SELECT name FROM system.dictionary_sources ORDER BY name"),
    };
  });
  afterAll(async () => {
    outside.stop();
    await readOnly.stop();
    await writable.stop();
  });

  /** Sends an attack; returns what was wrong with the answer, if anything (it must be refused, and leak nothing). */
  async function attempt(service: TestService, attack: Attack): Promise<string | undefined> {
    const search = new URLSearchParams(attack.search);
    if (attack.get) search.set("query", attack.sql);
    let path = `/?${search}`;
    if (attack.sessionSet !== undefined) {
      const id = `attack-${crypto.randomUUID()}`;
      path = `/?${search}&session_id=${id}`;
      const set = await service.query!.fetch(path, { method: "POST", body: attack.sessionSet });
      const text = await set.text();
      if (outside.leaks(text)) return `SET leaked: ${text.slice(0, 120)}`;
      if (set.status === 200) return `SET accepted: ${attack.sessionSet}`;
    }
    const response = await service.query!.fetch(path, {
      method: attack.get ? "GET" : "POST",
      ...(!attack.get && { body: attack.sql }),
      headers: attack.headers ?? {},
    });
    const text = await response.text();
    if (outside.leaks(text)) return `leaked: ${text.slice(0, 160)}`;
    if (attack.answer !== undefined) return text === attack.answer ? undefined : `answered ${text.slice(0, 80)}`;
    if (response.status === 200 && attack.sessionSet === undefined) return `answered 200: ${text.slice(0, 80)}`;
    return undefined;
  }

  async function run(service: TestService, attacks: readonly Attack[]): Promise<void> {
    const wrong: string[] = [];
    for (const attack of attacks) {
      const problem = await attempt(service, attack);
      if (problem !== undefined) wrong.push(`${JSON.stringify(attack).slice(0, 200)} → ${problem}`);
    }
    expect(wrong).toEqual([]);
    outside.untouched(service.config.clickhouse.kind === "embedded" ? service.config.clickhouse.dataDir : undefined);
  }

  /** Arguments that point a table function, engine or source at the canary, the listeners and the watched folder. */
  const reach = () =>
    `'${outside.canary}', '${outside.url}', '${outside.address}', '${outside.watched}/out', 'CSV', 'a String'`;

  /** Table functions the port allows, each of which reads only its arguments or the service's tables. */
  const ALLOWED = new Set(["numbers", "numbers_mt", "zeros", "zeros_mt", "values", "generateRandom", "null"]);
  ALLOWED.add("generate_series").add("generateSeries").add("view").add("merge").add("format");

  test("every table function the engine knows, in every position and through every door, read-only", async () => {
    const functions = catalogue.functions.filter((name) => !ALLOWED.has(name));
    expect(functions.length).toBeGreaterThan(40);
    const attacks: Attack[] = functions.flatMap((fn): Attack[] => {
      const call = `${fn}(${reach()})`;
      return [
        { sql: `SELECT * FROM ${call}` },
        { sql: `SELECT * FROM numbers(1) AS n JOIN ${call} AS f ON 1` },
        { sql: `SELECT 1 WHERE 1 IN (SELECT * FROM ${call})` },
        { sql: `WITH (SELECT any(*) FROM ${call}) AS x SELECT x` },
        { sql: `DESCRIBE TABLE ${call}` },
        { sql: `SELECT * FROM view(SELECT * FROM ${call})` },
        { sql: `SELECT * FROM ${call}`, get: true },
      ];
    });
    await run(readOnly, attacks);
  }, 120_000);

  test("every table function as a write's source or target, with writes allowed", async () => {
    const functions = catalogue.functions.filter((name) => !ALLOWED.has(name));
    const attacks: Attack[] = functions.flatMap((fn): Attack[] => [
      { sql: `INSERT INTO FUNCTION ${fn}(${reach()}) SELECT 'x'` },
      { sql: `CREATE TABLE t_${crypto.randomUUID().slice(0, 8)} AS ${fn}(${reach()})` },
      { sql: `CREATE VIEW v_${crypto.randomUUID().slice(0, 8)} AS SELECT * FROM ${fn}(${reach()})` },
    ]);
    await run(writable, attacks);
  }, 120_000);

  test("every table engine that keeps data outside the service's directory, and every disk type", async () => {
    const kept =
      /^(?:(?:Replacing|Summing|Aggregating|Collapsing|VersionedCollapsing|Coalescing)?MergeTree|Memory|Log|TinyLog|StripeLog|Null|Set|Join|GenerateRandom)$/;
    const engines = catalogue.engines.filter((name) => !kept.test(name));
    expect(engines.length).toBeGreaterThan(20);
    const attacks: Attack[] = [
      ...engines.map((engine) => ({ sql: `CREATE TABLE e_${engine} (a String) ENGINE = ${engine}(${reach()})` })),
      ...catalogue.disks.map((type) => ({
        sql:
          `CREATE TABLE d_${type} (a String) ENGINE = MergeTree ORDER BY a SETTINGS disk = disk(type = ${type}, ` +
          `path = '${outside.watched}/', endpoint = '${outside.url}', metadata_path = '${outside.watched}/m')`,
      })),
      ...catalogue.disks.map((type) => ({
        sql: `ALTER TABLE events MODIFY SETTING disk = disk(type = ${type}, path = '${outside.watched}/')`,
      })),
      { sql: `CREATE TABLE s (a String) ENGINE = MergeTree ORDER BY a SETTINGS storage_policy = 'default'` },
      { sql: `CREATE TABLE b (a String) ENGINE = Buffer(_local, '${outside.watched}/x.csv', 1, 1, 1, 1, 1, 1, 1)` },
      { sql: "CREATE TABLE b (a String) ENGINE = Buffer(system, 'stack_trace', 1, 1, 1, 1, 1, 1, 1)" },
      { sql: "CREATE TABLE m (a String) ENGINE = Merge(_local, '.*')" },
      { sql: "CREATE TABLE m ENGINE = Merge(system, '^stack')" },
      { sql: `CREATE TABLE r (a String) ENGINE = EmbeddedRocksDB(0, '${outside.watched}/rocks') PRIMARY KEY a` },
      { sql: "CREATE DATABASE f ENGINE = Filesystem('/')" },
      { sql: `CREATE DATABASE f2 ENGINE = Filesystem('${outside.canaryDir}')` },
      { sql: "CREATE DATABASE a2 ENGINE = Atomic" },
    ];
    await run(writable, attacks);
  }, 120_000);

  test("every dictionary source, and the functions that read dictionaries", async () => {
    expect(catalogue.sources.length).toBeGreaterThan(10);
    const attacks: Attack[] = catalogue.sources.flatMap((source): Attack[] => [
      {
        sql:
          `CREATE DICTIONARY dict_${source} (a String) PRIMARY KEY a SOURCE(${source}(path '${outside.canary}' ` +
          `url '${outside.url}' host '127.0.0.1' port ${outside.address.split(":")[1]} format 'CSV')) ` +
          "LAYOUT(FLAT()) LIFETIME(0)",
      },
    ]);
    attacks.push({ sql: "SELECT dictGet('d', 'a', 1)" }, { sql: "SELECT * FROM dictionary('d')" });
    await run(writable, attacks);
  }, 60_000);

  test("the findings: SQL in settings, paths as tables, introspection, thread priority, the engine's log", async () => {
    const file = `file('${outside.canary}')`;
    const secrets = "file('/proc/self/environ')";
    const attacks: Attack[] = [
      // SQL-valued settings, through the URL, a session's SET and a SETTINGS clause
      { sql: "SELECT 1", search: { additional_result_filter: `toUInt64(${file}) = 1` } },
      { sql: "SELECT 1", search: { additional_result_filter: `toUInt64(${secrets}) = 1` } },
      { sql: "SELECT * FROM events", search: { additional_table_filters: `{'events': 'toUInt64(${file}) = 1'}` } },
      { sql: "SELECT 1", sessionSet: `SET additional_result_filter = 'toUInt64(${file}) = 1'` },
      { sql: `SELECT 1 SETTINGS additional_result_filter = 'toUInt64(${file}) = 1'` },
      { sql: `SELECT toUInt64(${file})` },
      { sql: `SELECT toUInt64(${secrets})` },
      // paths as table names: the filesystem database behind the engine's default one
      { sql: `EXISTS TABLE \`${outside.canary}\``, answer: "0\n" }, // a table of the service's database, none
      { sql: `EXISTS TABLE _local.\`${outside.canary}\`` },
      { sql: `SELECT * FROM _local.\`${outside.canary}\`` },
      { sql: `SELECT * FROM default.\`${outside.canary}\`` },
      { sql: "SELECT * FROM _local.`package.json`" },
      { sql: `SHOW CREATE TABLE _local.\`${outside.canary}\`` },
      { sql: `DESCRIBE TABLE _local.\`${outside.canary}\`` },
      { sql: "SHOW TABLES FROM _local" },
      { sql: "USE _local" },
      { sql: "SELECT 1", search: { database: "_local" } },
      { sql: "SELECT 1", headers: { "X-ClickHouse-Database": "_local" } },
      { sql: `SELECT * FROM {t:Identifier}`, search: { param_t: outside.canary } },
      { sql: `SELECT * FROM merge('_local', '.*')` },
      { sql: "SELECT * FROM merge(REGEXP('^_l'), '.*')" },
      { sql: `SELECT hasColumnInTable('_local', '${outside.canary}', 'c1')` },
      { sql: `SELECT joinGet('_local.x', 'a', 1)` },
      // introspection: the process's threads, symbols and paths
      { sql: "SELECT count() FROM system.stack_trace" },
      { sql: "SELECT addressToSymbol(toUInt64(1))" },
      { sql: "SELECT addressToLine(toUInt64(1))" },
      { sql: "SELECT demangle('x')" },
      { sql: "SELECT getServerSetting('user_files_path')" },
      { sql: "SELECT * FROM system.symbols" },
      { sql: "SELECT * FROM system.server_settings" },
      { sql: "SELECT * FROM system.build_options" },
      { sql: "SELECT * FROM system.disks" },
      { sql: "SELECT * FROM system.user_directories" },
      { sql: "SELECT * FROM system.named_collections" },
      { sql: "SELECT * FROM merge('system', '^stack')" },
      { sql: "SELECT 1", search: { allow_introspection_functions: "1" } },
      // the engine's own controls
      { sql: "SELECT 1", search: { os_thread_priority: "-20" } },
      { sql: "SELECT 1", search: { priority: "0" } },
      { sql: "SELECT 1", search: { send_logs_level: "trace" } },
      { sql: "SELECT 1", search: { log_queries: "1" } },
      { sql: "SELECT 1", search: { format_schema: outside.canary } },
      { sql: "SELECT 1", search: { input_format_record_errors_file_path: `${outside.watched}/errors` } },
      { sql: "SELECT 1", search: { format_avro_schema_registry_url: outside.url } },
      { sql: "SELECT 1", search: { no_such_setting: "1" } },
      { sql: "SHOW PROCESSLIST" },
      // SQL in a table function's structure string, which the engine evaluates (found by the red team)
      {
        sql: `SELECT * FROM format(JSONEachRow, 'a String, b String DEFAULT ${file.replaceAll("'", "''")}', '{"a":"x"}')`,
      },
      { sql: `SELECT * FROM generateRandom('a String, b String MATERIALIZED ${file.replaceAll("'", "''")}') LIMIT 1` },
      { sql: `SELECT * FROM values('a String, b String ALIAS ${file.replaceAll("'", "''")}', 'x')` },
      { sql: "SELECT last_error_message, last_error_trace FROM system.errors" },
      // …and a structure the engine folds into a string: concat(), a cast, an identifier, a WITH alias (the re-test's)
      {
        sql: `SELECT b FROM generateRandom(concat('a UInt8, b String AL', 'IAS ${file.replaceAll("'", "''")}')) LIMIT 1`,
      },
      { sql: "SELECT * FROM generateRandom('a UInt8, b String ALIAS 1'::String) LIMIT 1" },
      { sql: `SELECT * FROM format(JSONEachRow, \`a String, b String DEFAULT ${file}\`, '{"a":"x"}')` },
      { sql: `WITH 'a String, b String DEFAULT 1' AS s SELECT * FROM format(JSONEachRow, s, '{"a":"x"}')` },
      { sql: `SELECT hasColumnInTable(concat('_lo', 'cal'), '${outside.canary}', 'c1')` },
      { sql: "SELECT hasColumnInTable(concat('sys', 'tem'), 'errors', 'value')" },
      // a scalar function's structure string (the third pass's)
      { sql: `SELECT structureToCapnProtoSchema('a String DEFAULT toUInt8(${file.replaceAll("'", "''")})')` },
      { sql: `SELECT structureToProtobufSchema('a String DEFAULT toUInt8(${secrets.replaceAll("'", "''")})')` },
      { sql: "SELECT __getScalar('x')" },
      // the net under them: any string that defines columns with expressions, whatever function takes it
      { sql: `SELECT length('a String dEfAuLt toUInt8(${file.replaceAll("'", "''")})')` },
      { sql: `SELECT 1 INTO OUTFILE '${outside.watched}/out.csv'` },
    ];
    await run(readOnly, attacks);
    // the same through a writable port, with writes and reads that would reach a file
    await run(writable, [
      ...attacks,
      { sql: `INSERT INTO events FROM INFILE '${outside.canary}' FORMAT CSV` },
      { sql: `INSERT INTO _local.\`${outside.watched}/x.csv\` (a, b) SELECT 1, 2` },
      { sql: `INSERT INTO \`${outside.watched}/x.csv\` (a, b) SELECT 1, 2` },
      { sql: `INSERT INTO \`${outside.watched}/x.csv\` FORMAT CSV\n1,2\n` },
      { sql: `CREATE TABLE c AS _local.\`${outside.canary}\`` },
      { sql: `RENAME TABLE events TO _local.\`${outside.watched}/x\`` },
      { sql: "CREATE TABLE c AS system.stack_trace" },
      // a CREATE's own SETTINGS clauses, the system databases as targets, the port's own tables (the red team's)
      {
        sql: `CREATE TABLE s2 ENGINE = Memory AS SELECT * FROM format(Template, 'a,b') SETTINGS format_template_row = '${outside.canary}'`,
      },
      { sql: "CREATE VIEW lifted AS SELECT getSetting('max_execution_time') SETTINGS max_execution_time = 0" },
      { sql: "CREATE TABLE slow ENGINE = Memory AS SELECT 1 AS z SETTINGS max_memory_usage = 0" },
      { sql: "DROP DATABASE system" },
      { sql: "DROP DATABASE information_schema" },
      { sql: "CREATE TABLE system.mine (x UInt8) ENGINE = Memory" },
      { sql: "INSERT INTO system.query_log (type, query) VALUES ('QueryFinish', 'forged')" },
      { sql: "TRUNCATE TABLE system.query_log" },
      { sql: "CREATE OR REPLACE VIEW system.processes AS SELECT * FROM system.one" },
      { sql: "RENAME TABLE events TO system.events" },
      { sql: "CREATE MATERIALIZED VIEW mvq TO system.query_log AS SELECT 'QueryFinish' AS type FROM events" },
      { sql: "ALTER TABLE events MOVE PARTITION tuple() TO TABLE system.query_log" },
      { sql: "INSERT INTO events VALUES", search: { input_format_values_interpret_expressions: "1" } },
    ]);
  }, 60_000);

  test("VALUES rows are data, not SQL: a function in them is not called", async () => {
    const post = (sql: string) => writable.query!.fetch("/", { method: "POST", body: sql });
    expect((await post("CREATE TABLE vals (s String) ENGINE = Memory")).status).toBe(200);
    const inserted = await post(`INSERT INTO vals VALUES (${`file('${outside.canary}')`})`);
    expect(outside.leaks(await inserted.text())).toBe(false);
    expect(inserted.status).not.toBe(200);
    expect(await (await post("SELECT count() FROM vals")).text()).toBe("0\n");
    outside.untouched();
  });

  test("system.processes shows the port's queries only, and other clients' query texts not at all", async () => {
    const query = (sql: string) => readOnly.query!.fetch("/", { method: "POST", body: sql });
    const secret = `secret-${crypto.randomUUID()}`;
    const writePath = readOnly.db.rows(`SELECT sleep(2), 'write-path-${secret}'`);
    const other = query(`SELECT sleep(2), '${secret}' FORMAT Null`);
    // until the other client's query runs (its session is set up first); the write path's runs all along
    let rows: { query: string }[] = [];
    for (let tries = 0; tries < 15 && rows.length < 2; tries++) {
      await Bun.sleep(100);
      const seen = await (await query("SELECT query_id, query FROM system.processes FORMAT JSONEachRow")).text();
      expect(seen).not.toContain(secret);
      rows = seen
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { query: string });
    }
    expect(rows.length).toBe(2); // the other client's query and this one; not the write path's
    // its own text (read through the port's view), and the other client's blank
    expect(
      rows.map((row) => (row.query === "" ? "other" : row.query.includes("processes") ? "own" : row.query)).sort(),
    ).toEqual(["other", "own"]);
    await other;
    await writePath;
  });
});
