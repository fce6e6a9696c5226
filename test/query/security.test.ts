import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { MAX_INSERT_BYTES } from "../../src/query/http";
import { MAX_QUERY_BYTES } from "../../src/query/settings";
import { scratchDir } from "../helpers/scratch";
import { send, startService, type TestQueryPort, type TestService } from "../helpers/service";

// The query port runs in the service's process, with its rights: what an attacker with the password (or without
// it) might try, and what must hold afterwards. Each refusal is checked for ClickHouse's code, and afterwards
// that nothing changed: no row, no table, no file, no connection.

const embedded = !process.env.CLICKHOUSE_URL;
const KEY = "key-1";

/** A loopback HTTP server and a raw TCP listener that count every connection they get. */
function listeners() {
  const hits = { http: 0, tcp: 0 };
  const http = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => {
      hits.http++;
      return new Response("a,b\n1,2\n");
    },
  });
  const tcp = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open: (socket) => {
        hits.tcp++;
        socket.end();
      },
      data: () => {},
    },
  });
  return {
    hits,
    httpUrl: `http://127.0.0.1:${http.port}/data.csv`,
    tcpAddress: `127.0.0.1:${tcp.port}`,
    stop: () => {
      http.stop(true);
      tcp.stop(true);
    },
  };
}

/** Every way to reach outside the engine's own tables this suite tries, with the code each must be refused with. */
function hostile(out: ReturnType<typeof listeners>, outFile: string): [string, string][] {
  const { httpUrl, tcpAddress } = out;
  return [
    // files
    ["SELECT * FROM file('/etc/passwd', 'LineAsString')", "497"],
    ["SELECT file('/etc/passwd')", "497"],
    ["SELECT FILE('/etc/passwd')", "497"],
    ["SELECT `file`('/etc/passwd')", "497"],
    ["SELECT length(file('/etc/passwd')) > 0", "497"],
    ["WITH (SELECT file('/etc/passwd')) AS f SELECT f", "497"],
    ["SELECT * FROM (SELECT * FROM file('/etc/passwd', 'LineAsString'))", "497"],
    ["SELECT 1 UNION ALL SELECT count() FROM file('/etc/passwd', 'LineAsString')", "497"],
    ["SELECT * FROM numbers(1) AS a JOIN file('/etc/passwd', 'LineAsString') AS b ON 1", "497"],
    ["SELECT * FROM view(SELECT * FROM file('/etc/passwd', 'LineAsString'))", "497"],
    ["DESCRIBE file('/etc/passwd', 'LineAsString')", "497"],
    ["EXPLAIN SELECT * FROM file('/etc/passwd', 'LineAsString')", "497"],
    ["SELECT * FROM file('/etc/passwd', 'LineAsString') SETTINGS readonly = 0", "164"],
    ["SELECT catboostEvaluate('/etc/passwd', 1)", "497"],
    ["SELECT dictGet('d', 'a', 1)", "497"],
    ["SELECT * FROM dictionary('d')", "497"],
    [`SELECT 1 INTO OUTFILE '${outFile}'`, "497"],
    [`SELECT 1 INTO OUTFILE '${outFile}' FORMAT CSV`, "497"],
    // other servers, programs, and loopback ports
    [`SELECT * FROM url('${httpUrl}', 'CSV')`, "497"],
    [`SELECT * FROM URL('${httpUrl}', 'CSV')`, "497"],
    [`SELECT * FROM remote('${tcpAddress}', system.one)`, "497"],
    [`SELECT * FROM remoteSecure('${tcpAddress}', system.one)`, "497"],
    [`SELECT * FROM mysql('${tcpAddress}', 'db', 't', 'u', 'p')`, "497"],
    [`SELECT * FROM postgresql('${tcpAddress}', 'db', 't', 'u', 'p')`, "497"],
    [`SELECT * FROM s3('${httpUrl}', 'CSV')`, "497"],
    ["SELECT * FROM executable('cat /etc/passwd', 'LineAsString', 'line String')", "497"],
    ["SELECT * FROM input('a UInt8')", "497"],
    ["SELECT * FROM cluster('default', system.one)", "497"],
    // writes, DDL and the engine's own controls
    ["INSERT INTO events SELECT * FROM events", "164"],
    ["INSERT INTO FUNCTION file('/tmp/x.csv', 'CSV', 'a UInt8') VALUES (1)", "164"],
    ["CREATE TABLE t (a UInt8) ENGINE = Memory", "164"],
    ["CREATE TABLE f (a UInt8) ENGINE = File(CSV)", "164"],
    [
      "CREATE DICTIONARY d (a UInt8) PRIMARY KEY a SOURCE(FILE(path '/etc/passwd' format 'CSV')) LAYOUT(FLAT()) LIFETIME(0)",
      "164",
    ],
    ["ALTER TABLE events DELETE WHERE 1", "164"],
    ["DROP TABLE events", "164"],
    ["TRUNCATE TABLE events", "164"],
    ["RENAME TABLE events TO gone", "164"],
    ["OPTIMIZE TABLE events FINAL", "164"],
    ["DELETE FROM events WHERE 1", "164"],
    ["SYSTEM STOP MERGES", "164"],
    ["SYSTEM SHUTDOWN", "164"],
    ["KILL QUERY WHERE 1", "164"],
    ["BACKUP TABLE events TO File('/tmp/b')", "164"],
    ["ATTACH TABLE x FROM '/etc' (a UInt8) ENGINE = MergeTree ORDER BY a", "164"],
    ["DETACH TABLE events", "164"],
    ["CREATE FUNCTION f AS (x) -> x", "164"],
    ["GRANT ALL ON *.* TO default", "164"],
    // settings: raising limits, leaving read-only
    ["SET readonly = 0", "164"],
    ["SET max_execution_time = 1000", "164"],
    ["SELECT 1 SETTINGS readonly = 0", "164"],
    ["SELECT 1 SETTINGS max_execution_time = 100000", "164"],
    ["SELECT 1 SETTINGS max_memory_usage = 0", "164"],
    ["SELECT * FROM (SELECT 1 SETTINGS max_threads = 100)", "164"],
    ["SELECT 1 SETTINGS max_ast_elements = 100000000", "164"],
    // more than one statement, and syntax tricks
    ["SELECT 1; DROP TABLE events", "62"],
    ["SELECT 1; SELECT file('/etc/passwd')", "62"],
    ["SELECT 1 AS `a\n Function file`", "62"],
    ['SELECT 1 AS "a\r\n  Function file"', "62"],
    ["SELECT 1 AS `a\\n Function file`", "62"],
    ["SELECT * FROM url('http://127.0.0.1:1/', CSV) AS `y\nTableExpression`", "62"],
  ];
}

describe.skipIf(!embedded)("the query port, read-only", () => {
  let service: TestService;
  let port: TestQueryPort;
  let out: ReturnType<typeof listeners>;
  const outFile = join(scratchDir("ingest-outfile-"), "out.csv");
  const post = (sql: string, search = "") => port.fetch(`/${search}`, { method: "POST", body: sql });

  beforeAll(async () => {
    service = await startService({ PUBLIC_API_KEYS: KEY, QUERY_PORT: "0" });
    port = service.query!;
    out = listeners();
    const batch = [{ event: "kept", distinct_id: "user-1" }];
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
  });
  afterAll(async () => {
    out.stop();
    await service.stop();
  });

  const tables = async () =>
    await (
      await post(
        "SELECT database || '.' || name FROM system.tables WHERE database NOT IN ('system', 'INFORMATION_SCHEMA', 'information_schema') ORDER BY 1",
      )
    ).text();

  test("every hostile query is refused with ClickHouse's code, and nothing changed: rows, tables, files, connections", async () => {
    const before = await tables();
    const refused: string[] = [];
    for (const [sql, code] of hostile(out, outFile)) {
      const response = await post(sql);
      const text = await response.text();
      if (response.headers.get("x-clickhouse-exception-code") !== code || !text.startsWith(`Code: ${code}.`)) {
        refused.push(`${sql} → ${response.status} ${text.slice(0, 160)}`);
      }
      expect(text).not.toContain("root:"); // nothing of /etc/passwd, ever
    }
    expect(refused).toEqual([]);
    expect(await tables()).toBe(before);
    expect(await (await post("SELECT event, count() FROM events GROUP BY event")).text()).toBe("kept\t1\n");
    expect(existsSync(outFile)).toBe(false);
    expect(out.hits).toEqual({ http: 0, tcp: 0 });
  });

  test("zeros() and format() are the engine's to refuse on a read-only session (READONLY); the others run", async () => {
    for (const sql of ["SELECT * FROM zeros(1)", "SELECT * FROM format(CSV, 'a String', 'x')"]) {
      expect([sql, (await post(sql)).headers.get("x-clickhouse-exception-code")]).toEqual([sql, "164"]);
    }
    const allowed =
      "SELECT count() FROM numbers(2) AS a, values('b UInt8', 1) AS b, generate_series(1, 1) AS c, view(SELECT 1) AS d";
    expect(await (await post(allowed)).text()).toBe("2\n");
  });

  test("a backslash and an n in an identifier are no line break", async () => {
    const response = await post("SELECT 1 AS `a\\\\n b` FORMAT JSONEachRow"); // an escaped backslash, then n
    expect(await response.json()).toEqual({ "a\\n b": 1 });
  });

  test("GET is read-only too", async () => {
    const response = await port.fetch(`/?query=${encodeURIComponent("DROP TABLE events")}`);
    expect(response.headers.get("x-clickhouse-exception-code")).toBe("164");
  });

  test("URL settings cannot raise a limit, remove one, or leave read-only; lowering is fine", async () => {
    const refused = [
      "readonly=0",
      "readonly=2",
      "max_execution_time=1000",
      "max_execution_time=0",
      "max_memory_usage=0",
      "max_memory_usage=99999999999999",
      "max_result_bytes=0",
      "max_threads=1000",
      "allow_ddl=1",
      "allow_introspection_functions=1",
      "format_schema=/etc/passwd",
      "output_format_schema=/tmp/schema.proto",
      "format_template_row=/etc/passwd",
      "timeout_overflow_mode=whatever",
      "priority=1", // a query may not jump ahead of the write path
      // a statement's syntax tree: the engine's defaults, lowered only (they could be raised to 1e8)
      "max_ast_depth=100000000",
      "max_ast_elements=100000000",
      "max_expanded_ast_elements=100000000",
      "max_ast_depth=0",
    ];
    for (const setting of refused) {
      const response = await post("SELECT 1", `?${setting}`);
      expect([setting, response.headers.get("x-clickhouse-exception-code")]).toEqual([setting, "164"]);
    }
    const lowered = ["readonly=1", "max_execution_time=5", "max_threads=1", "max_result_rows=10", "max_ast_depth=500"];
    for (const setting of lowered) {
      const response = await post("SELECT 1", `?${setting}`);
      expect([setting, response.status]).toEqual([setting, 200]);
    }
  });

  test("the limits hold: a query past QUERY_TIMEOUT_S, QUERY_MAX_MEMORY_MIB or QUERY_MAX_RESULT_MIB fails with ClickHouse's error", async () => {
    const limited = await startService({
      QUERY_PORT: "0",
      QUERY_TIMEOUT_S: "1",
      QUERY_MAX_MEMORY_MIB: "50",
      QUERY_MAX_RESULT_MIB: "1",
    });
    const query = (sql: string) => limited.query!.fetch("/?wait_end_of_query=1", { method: "POST", body: sql });
    try {
      const slow = await query("SELECT count() FROM numbers(100000000000)");
      expect([slow.status, slow.headers.get("x-clickhouse-exception-code")]).toEqual([408, "159"]); // TIMEOUT_EXCEEDED
      const large = await query("SELECT groupArray(number) FROM numbers(50000000)");
      expect(large.headers.get("x-clickhouse-exception-code")).toBe("241"); // MEMORY_LIMIT_EXCEEDED
      const wide = await query("SELECT number FROM numbers(10000000)");
      expect(wide.headers.get("x-clickhouse-exception-code")).toBe("396"); // TOO_MANY_ROWS_OR_BYTES
    } finally {
      await limited.stop();
    }
  });
});

describe.skipIf(!embedded)("authentication", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ QUERY_PORT: "0", QUERY_USER: "analyst", QUERY_PASSWORD: "s3cret" });
  });
  afterAll(() => service.stop());

  const query = (init: RequestInit, search = "") =>
    service.query!.fetch(`/${search}`, { method: "POST", body: "SELECT 1", auth: false, ...init });
  const basic = (user: string, password: string) => ({ authorization: `Basic ${btoa(`${user}:${password}`)}` });

  test("basic auth, X-ClickHouse-User/Key and user/password parameters each let the right credentials in", async () => {
    for (const response of [
      await query({ headers: basic("analyst", "s3cret") }),
      await query({ headers: { "X-ClickHouse-User": "analyst", "X-ClickHouse-Key": "s3cret" } }),
      await query({}, "?user=analyst&password=s3cret"),
    ]) {
      expect([response.status, await response.text()]).toEqual([200, "1\n"]);
    }
  });

  test("anything else is ClickHouse's authentication error, which does not tell the user from the password; it is logged without the password", async () => {
    const attempts: RequestInit[] = [
      {},
      { headers: basic("analyst", "wrong") },
      { headers: basic("default", "s3cret") },
      { headers: basic("analyst", "") },
      { headers: basic("analyst", "s3cret ") },
      { headers: { authorization: "Bearer s3cret" } },
      { headers: { "X-ClickHouse-User": "analyst" } },
      { headers: { ...basic("analyst", "s3cret"), "X-ClickHouse-Key": "s3cret" } }, // two ways at once
      { headers: { authorization: `Basic ${btoa("s3cret")}` } }, // no colon: the password, maybe, alone
      { headers: { authorization: `Basic ${btoa("analyst-s3cret")}` } },
      { headers: basic("", "s3cret") },
    ];
    for (const init of attempts) {
      const response = await query(init);
      expect([response.status, response.headers.get("x-clickhouse-exception-code")]).toEqual([403, "516"]);
      const text = await response.text();
      expect(text).toContain("(AUTHENTICATION_FAILED)");
      expect(text).not.toContain("s3cret");
    }
    const denied = service.query!.answers.filter((answer) => answer.outcome === "unauthenticated");
    expect(denied.length).toBe(attempts.length);
    expect(JSON.stringify(denied)).not.toContain("s3cret");
  });
});

describe.skipIf(!embedded)("the query port with writes allowed (QUERY_READONLY=0)", () => {
  let service: TestService;
  let out: ReturnType<typeof listeners>;
  beforeAll(async () => {
    service = await startService({ QUERY_PORT: "0", QUERY_READONLY: "0" });
    out = listeners();
  });
  afterAll(async () => {
    out.stop();
    await service.stop();
  });
  const post = (sql: string, search = "", body?: string) =>
    service.query!.fetch(`/${search}`, { method: "POST", body: body ?? sql });

  test("a POST creates a table, inserts into it (data in the body), alters, reads and drops it", async () => {
    expect((await post("CREATE TABLE notes (id UInt32, text String) ENGINE = MergeTree ORDER BY id")).status).toBe(200);
    const inserted = await post(
      "",
      `?query=${encodeURIComponent("INSERT INTO notes FORMAT JSONEachRow")}`,
      '{"id":1,"text":"a"}\n{"id":2,"text":"b"}\n',
    );
    expect(inserted.status).toBe(200);
    expect(JSON.parse(inserted.headers.get("x-clickhouse-summary")!).written_rows).toBe("2");
    expect((await post("ALTER TABLE notes ADD COLUMN extra UInt8")).status).toBe(200);
    // a table's own settings, as retention sets them on a server (a query's settings stay refused in the SQL)
    const modified = await post("ALTER TABLE notes MODIFY SETTING ttl_only_drop_parts = 1");
    expect([modified.status, await modified.text()]).toEqual([200, ""]);
    expect(
      await (
        await post("SELECT create_table_query LIKE '%ttl_only_drop_parts = 1%' FROM system.tables WHERE name = 'notes'")
      ).text(),
    ).toBe("1\n");
    expect(await (await post("SELECT id, text, extra FROM notes ORDER BY id")).text()).toBe("1\ta\t0\n2\tb\t0\n");
    expect((await post("DROP TABLE notes")).status).toBe(200);
  });

  test("what reaches outside stays refused: files, URLs, remote servers, outside engines, dictionaries, SYSTEM, KILL, SET", async () => {
    const refused: [string, string][] = [
      ["CREATE TABLE f (a UInt8) ENGINE = File(CSV)", "497"],
      [`CREATE TABLE u (a String) ENGINE = URL('${out.httpUrl}', CSV)`, "497"],
      ["CREATE TABLE d (a UInt8) ENGINE = Distributed('default', 'system', 'one')", "497"],
      ["CREATE DATABASE m ENGINE = MySQL('127.0.0.1:1', 'db', 'u', 'p')", "497"],
      ["CREATE TABLE x AS file('/etc/passwd', 'LineAsString')", "497"],
      [`CREATE VIEW v AS SELECT * FROM url('${out.httpUrl}', CSV)`, "497"],
      ["INSERT INTO FUNCTION file('/tmp/ingest-x.csv', 'CSV', 'a UInt8') VALUES (1)", "497"],
      [
        "CREATE DICTIONARY dd (a UInt8) PRIMARY KEY a SOURCE(FILE(path '/etc/passwd' format 'CSV')) LAYOUT(FLAT()) LIFETIME(0)",
        "497",
      ],
      ["ALTER TABLE events FREEZE", "497"],
      ["ALTER TABLE events MODIFY SETTING storage_policy = 'default'", "497"],
      ["SYSTEM STOP MERGES", "164"],
      ["KILL QUERY WHERE 1", "164"],
      ["SET max_execution_time = 1000", "164"],
      ["ATTACH TABLE x FROM '/etc' (a UInt8) ENGINE = MergeTree ORDER BY a", "164"],
      ["BACKUP TABLE events TO File('/tmp/b')", "164"],
      [`SELECT * FROM url('${out.httpUrl}', CSV)`, "497"],
      ["SELECT file('/etc/passwd')", "497"],
    ];
    const wrong: string[] = [];
    for (const [sql, code] of refused) {
      const response = await post(sql);
      const text = await response.text();
      if (response.headers.get("x-clickhouse-exception-code") !== code) wrong.push(`${sql} → ${text.slice(0, 160)}`);
    }
    expect(wrong).toEqual([]);
    expect(out.hits).toEqual({ http: 0, tcp: 0 });
    expect(existsSync("/tmp/ingest-x.csv")).toBe(false);
  });

  test("CREATE DATABASE takes a comment and a FORMAT clause, as a server does; no other engine", async () => {
    for (const sql of [
      "CREATE DATABASE made FORMAT JSON",
      "CREATE DATABASE IF NOT EXISTS made2 COMMENT 'for notes' FORMAT JSONEachRow",
    ]) {
      const response = await post(sql);
      expect([sql, response.status, await response.text()]).toEqual([sql, 200, ""]);
    }
    const memory = await post("CREATE DATABASE made3 ENGINE = Memory FORMAT JSON");
    expect(memory.headers.get("x-clickhouse-exception-code")).toBe("497");
    for (const name of ["made", "made2"]) expect((await post(`DROP DATABASE ${name}`)).status).toBe(200);
  });

  test("an INSERT's data may pass a query text's MAX_QUERY_BYTES, up to MAX_INSERT_BYTES inflated; more is QUERY_IS_TOO_LARGE", async () => {
    expect((await post("CREATE TABLE sink (s String) ENGINE = Null")).status).toBe(200);
    const insert = (body: Uint8Array, headers: Record<string, string> = {}) =>
      service.query!.fetch(`/?query=${encodeURIComponent("INSERT INTO sink FORMAT TSV")}`, {
        method: "POST",
        body,
        headers,
      });
    const rows = (2 * MAX_QUERY_BYTES) / 8;
    const data = new TextEncoder().encode("1234567\n".repeat(rows));
    const taken = await insert(data);
    expect([taken.status, JSON.parse(taken.headers.get("x-clickhouse-summary")!).written_rows]).toEqual([
      200,
      String(rows),
    ]);
    // a small body on the wire that inflates past the limit is refused as it inflates
    const bomb = gzipSync(new Uint8Array(MAX_INSERT_BYTES + 1).fill(0x0a), { level: 1 });
    const refused = await insert(bomb, { "content-encoding": "gzip" });
    expect([refused.status, refused.headers.get("x-clickhouse-exception-code")]).toEqual([413, "229"]);
    expect(await refused.text()).toContain(`larger than the maximum of ${MAX_INSERT_BYTES} bytes`);
    expect((await post("DROP TABLE sink")).status).toBe(200);
  });

  test("with writes allowed, format() and zeros() run", async () => {
    const response = await post("SELECT a, (SELECT count() FROM zeros(2)) FROM format(CSV, 'a String', 'x')");
    expect([response.status, await response.text()]).toEqual([200, "x\t2\n"]);
  });

  test("inserts binary formats; optimizes and updates; FETCH and live views refused; async_insert inserts at once", async () => {
    const raw = (sql: string, body: ArrayBuffer) =>
      service.query!.fetch(`/?query=${encodeURIComponent(sql)}`, { method: "POST", body });
    expect((await post("CREATE TABLE bin (a UInt32, s String) ENGINE = MergeTree ORDER BY a")).status).toBe(200);
    for (const format of ["Parquet", "RowBinary", "Native"]) {
      const data = await (
        await post(`SELECT toUInt32(number) AS a, toString(number) AS s FROM numbers(5) FORMAT ${format}`)
      ).arrayBuffer();
      const inserted = await raw(`INSERT INTO bin FORMAT ${format}`, data);
      expect([format, inserted.status, JSON.parse(inserted.headers.get("x-clickhouse-summary")!).written_rows]).toEqual(
        [format, 200, "5"],
      );
    }
    expect(await (await post("SELECT count(), sum(a) FROM bin")).text()).toBe("15\t30\n");
    expect((await post("OPTIMIZE TABLE bin FINAL")).status).toBe(200);
    expect((await post("ALTER TABLE bin UPDATE s = 'u' WHERE a = 1")).status).toBe(200);
    expect(await (await post("SELECT count() FROM bin WHERE s = 'u'")).text()).toBe("3\n");
    const fetched = await post("ALTER TABLE bin FETCH PARTITION tuple() FROM '/clickhouse/tables/bin'");
    expect(fetched.headers.get("x-clickhouse-exception-code")).toBe("497");
    const live = await post("CREATE LIVE VIEW lv AS SELECT count() FROM bin");
    expect(live.headers.get("x-clickhouse-exception-code")).toBe("62"); // the engine no longer has them
    const ttl = await post("ALTER TABLE bin MODIFY TTL toDateTime(a) + toIntervalDay((SELECT 1))");
    expect(ttl.status).not.toBe(200); // the engine refuses a subquery in a TTL
    const queued = await post("INSERT INTO bin VALUES (100, 'x')", "?async_insert=1&wait_for_async_insert=0");
    expect(queued.status).toBe(200);
    expect(await (await post("SELECT count() FROM bin WHERE a = 100")).text()).toBe("1\n"); // not queued
    expect((await post("DROP TABLE bin")).status).toBe(200);
  });

  test("system.query_log keeps an INSERT's text up to its data, its written rows, and an error while streaming", async () => {
    expect((await post("CREATE TABLE logged (a UInt32, s String) ENGINE = Memory")).status).toBe(200);
    const id = `insert-${crypto.randomUUID()}`;
    const secret = `secret-${crypto.randomUUID()}`;
    const sql = "INSERT INTO logged FORMAT JSONEachRow";
    const inserted = await post(sql, `?query_id=${id}`, `${sql}\n{"a":1,"s":"${secret}"}\n{"a":2,"s":"x"}\n`);
    expect(inserted.status).toBe(200);
    const failed = `stream-${crypto.randomUUID()}`;
    const streamed = await post("SELECT throwIf(number = 1500000) FROM numbers(3000000)", `?query_id=${failed}`);
    expect([streamed.status, (await streamed.text()).includes("__exception__")]).toEqual([200, true]);
    await Bun.sleep(1500); // the log is written about once a second
    const log = await post(
      `SELECT query_id = '${id}' AS insert, type, query, written_rows, exception_code FROM system.query_log WHERE query_id IN ('${id}', '${failed}') AND type != 'QueryStart' ORDER BY insert DESC FORMAT JSONEachRow`,
    );
    const rows = (await log.text())
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(rows).toEqual([
      { insert: 1, type: "QueryFinish", query: `${sql}\n`, written_rows: 2, exception_code: 0 },
      {
        insert: 0,
        type: "ExceptionWhileProcessing",
        query: "SELECT throwIf(number = 1500000) FROM numbers(3000000)",
        written_rows: 0,
        exception_code: 395,
      },
    ]);
    expect(JSON.stringify(rows)).not.toContain(secret);
    expect((await post("DROP TABLE logged")).status).toBe(200);
  });

  test("a GET still cannot write", async () => {
    const response = await service.query!.fetch(
      `/?query=${encodeURIComponent("CREATE TABLE g (a UInt8) ENGINE = Memory")}`,
    );
    expect(response.headers.get("x-clickhouse-exception-code")).toBe("164");
  });
});
