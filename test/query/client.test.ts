import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  type ClickHouseClient,
  ClickHouseError,
  ClickHouseLogLevel,
  createClient,
  TupleParam,
} from "@clickhouse/client";
import { send, startService, type TestService } from "../helpers/service";

// The official @clickhouse/client, unmodified, against the query port: what a dashboard or script would do.

const embedded = !process.env.CLICKHOUSE_URL;
const KEY = "key-1";

describe.skipIf(!embedded)("@clickhouse/client against the query port", () => {
  let service: TestService;
  let client: ClickHouseClient;

  beforeAll(async () => {
    service = await startService({ PUBLIC_API_KEYS: KEY, QUERY_PORT: "0", QUERY_READONLY: "0" });
    client = createClient({
      url: service.query!.url,
      username: "default",
      password: "test-password",
      compression: { request: true, response: true },
      log: { level: ClickHouseLogLevel.OFF }, // the errors below are expected
    });
    const batch = Array.from({ length: 20 }, (_, i) => ({ event: "signed_up", distinct_id: `user-${i}` }));
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
  });
  afterAll(async () => {
    await client.close();
    await service.stop();
  });

  test("ping", async () => {
    expect(await client.ping()).toEqual({ success: true });
  });

  test("query: the service's events as JSON rows, with compressed requests and responses", async () => {
    const result = await client.query({
      query: "SELECT event, count() AS n FROM events GROUP BY event",
      format: "JSONEachRow",
    });
    expect(await result.json()).toEqual([{ event: "signed_up", n: 20 }]);
    expect(result.query_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("query_params bind typed values, strings with quotes and escapes included", async () => {
    const result = await client.query({
      query:
        "SELECT count() AS n, {quote:String} AS s, {ids:Array(String)} AS ids FROM events WHERE distinct_id IN {ids:Array(String)}",
      query_params: { ids: ["user-1", "user-2", "nobody"], quote: "it's a \\ \t test" },
      format: "JSONEachRow",
    });
    expect(await result.json()).toEqual([{ n: 2, s: "it's a \\ \t test", ids: ["user-1", "user-2", "nobody"] }]);
  });

  test("stream: a large result arrives row by row", async () => {
    const result = await client.query({ query: "SELECT number FROM numbers(300000)", format: "JSONCompactEachRow" });
    let rows = 0;
    let last: unknown;
    for await (const batch of result.stream()) {
      for (const row of batch) {
        rows++;
        last = row.json();
      }
    }
    expect([rows, last]).toEqual([300_000, [299_999]]);
  });

  test("errors are the client's ClickHouseError with ClickHouse's code and type", async () => {
    const cases = [
      ["SELECT * FROM no_such_table", "60", "UNKNOWN_TABLE"],
      ["SELECT file('/etc/passwd')", "497", "ACCESS_DENIED"],
      ["invalid", "62", "SYNTAX_ERROR"], // a bare word is no query, as on a server
    ] as const;
    for (const [query, code, type] of cases) {
      const error = await client.query({ query }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(ClickHouseError);
      expect([query, (error as ClickHouseError).code, (error as ClickHouseError).type]).toEqual([query, code, type]);
    }
    const wrong = createClient({
      url: service.query!.url,
      username: "default",
      password: "wrong",
      log: { level: ClickHouseLogLevel.OFF },
    });
    try {
      const error = await wrong.query({ query: "SELECT 1" }).catch((caught: unknown) => caught);
      expect((error as ClickHouseError).type).toBe("AUTHENTICATION_FAILED");
    } finally {
      await wrong.close();
    }
  });

  test("with writes allowed: command creates a table, insert fills it, and both report what they did", async () => {
    await client.command({ query: "CREATE TABLE scores (who String, score UInt32) ENGINE = MergeTree ORDER BY who" });
    const inserted = await client.insert({
      table: "scores",
      values: [
        { who: "a", score: 3 },
        { who: "b", score: 5 },
      ],
      format: "JSONEachRow",
    });
    expect(inserted.executed).toBe(true);
    expect(inserted.summary?.written_rows).toBe("2");
    const result = await client.query({ query: "SELECT sum(score) AS total FROM scores", format: "JSONEachRow" });
    expect(await result.json()).toEqual([{ total: 8 }]);
    await client.command({ query: "DROP TABLE scores" });
  });
});

describe.skipIf(!embedded)("@clickhouse/client, as a ClickHouse server answers it", () => {
  let service: TestService;
  let client: ClickHouseClient;
  beforeAll(async () => {
    service = await startService({ QUERY_PORT: "0", QUERY_READONLY: "0" });
    client = createClient({
      url: service.query!.url,
      password: "test-password",
      compression: { request: true, response: true },
      log: { level: ClickHouseLogLevel.OFF },
    });
  });
  afterAll(async () => {
    await client.close();
    await service.stop();
  });
  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (caught: unknown) => caught as ClickHouseError,
    );

  test("an error in the middle of a stream is the client's ClickHouseError, not a truncated result", async () => {
    const result = await client.query({
      query: "SELECT number, throwIf(number = 150000) AS t FROM numbers(300000)",
      format: "JSONEachRow",
      clickhouse_settings: { max_block_size: "1000" },
    });
    let rows = 0;
    const error = await failure(
      (async () => {
        for await (const batch of result.stream()) rows += batch.length;
      })(),
    );
    expect(error).toBeInstanceOf(ClickHouseError);
    expect([error!.code, error!.type]).toEqual(["395", "FUNCTION_THROW_IF_VALUE_IS_NON_ZERO"]);
    expect(rows).toBeLessThan(300_000);
  });

  test("one JSON document over many blocks, with totals; an error body is compressed as asked", async () => {
    const result = await client.query({
      query: "SELECT number % 3 AS k, count() AS c FROM numbers(30) GROUP BY k WITH TOTALS ORDER BY k LIMIT 2",
      clickhouse_settings: { max_block_size: "1" },
    });
    const json = await result.json<{ k: number; c: number }>();
    expect(json.data).toEqual([
      { k: 0, c: 10 },
      { k: 1, c: 10 },
    ]);
    expect([json.rows, json.totals]).toEqual([2, { k: 0, c: 30 }]);
    expect(json.rows_before_limit_at_least).toBeGreaterThanOrEqual(2);
    const error = await failure(client.query({ query: "SELECT * FROM no_such_table" }));
    expect(error).toBeInstanceOf(ClickHouseError); // not "incorrect header check": the error text is gzipped too
    expect(error!.type).toBe("UNKNOWN_TABLE");
  });

  test("query parameters: maps, tuples and nested types; in a multipart body; an alias placeholder", async () => {
    const query =
      "SELECT {m:Map(String, UInt32)} AS m, {t:Tuple(UInt8, String)} AS t, {a:Array(Map(String, UInt8))} AS a";
    const query_params = { m: { a: 1, b: 2 }, t: new TupleParam([1, "x"]), a: [{ k: 3 }] };
    const expected = [{ m: { a: 1, b: 2 }, t: [1, "x"], a: [{ k: 3 }] }];
    for (const use_multipart_params of [false, true]) {
      const result = await client.query({ query, query_params, use_multipart_params, format: "JSONEachRow" });
      expect(await result.json()).toEqual(expected);
    }
    const aliased = await client.query({
      query: "SELECT 1 AS {name:Identifier}",
      query_params: { name: "renamed" },
      format: "JSONEachRow",
    });
    expect(await aliased.json()).toEqual([{ renamed: 1 }]);
  });

  test("inserts in any format the engine reads, VALUES and FORMAT data in the body included, and * EXCEPT", async () => {
    await client.command({
      query: "CREATE TABLE ins (id UInt32, name String, extra UInt8 DEFAULT 7) ENGINE = MergeTree ORDER BY id",
    });
    const rows = [
      { id: 1, name: "a" },
      { id: 2, name: "b" },
    ];
    const meta = [
      { name: "id", type: "UInt32" },
      { name: "name", type: "String" },
    ];
    const columns: [string, ...string[]] = ["id", "name"];
    const stores = async (format: string, insert: () => Promise<unknown>) => {
      await client.command({ query: "TRUNCATE TABLE ins" });
      await insert();
      const stored = await client.query({
        query: "SELECT id, name, extra FROM ins ORDER BY id",
        format: "JSONEachRow",
      });
      expect([format, await stored.json()]).toEqual([format, rows.map((row) => ({ ...row, extra: 7 }))]);
    };
    await stores("JSONEachRow", () => client.insert({ table: "ins", format: "JSONEachRow", values: rows, columns }));
    await stores("JSONCompactEachRowWithNames", () =>
      client.insert({
        table: "ins",
        format: "JSONCompactEachRowWithNames",
        values: [columns, [1, "a"], [2, "b"]],
        columns,
      }),
    );
    await stores("JSONObjectEachRow", () =>
      client.insert({ table: "ins", format: "JSONObjectEachRow", values: { r1: rows[0], r2: rows[1] }, columns }),
    );
    await stores("JSON", () => client.insert({ table: "ins", format: "JSON", values: { meta, data: rows }, columns }));
    await client.command({ query: "TRUNCATE TABLE ins" });
    await client.insert({
      table: "ins",
      values: [[3, "c"]],
      format: "JSONCompactEachRow",
      columns: { except: ["extra"] },
    });
    await client.command({ query: "INSERT INTO ins (id, name) VALUES (4, 'd'), (5, 'it''s')" });
    await client.exec({ query: 'INSERT INTO ins (id, name) FORMAT JSONEachRow {"id": 6, "name": "f"}' });
    const stored = await client.query({ query: "SELECT id, name FROM ins ORDER BY id", format: "JSONCompactEachRow" });
    expect(await stored.json()).toEqual([
      [3, "c"],
      [4, "d"],
      [5, "it's"],
      [6, "f"],
    ]);
    // a Buffer flushes into its table later, with no client: refused (docs/query.md#what-a-writable-port-refuses)
    const buffered = await failure(
      client.command({
        query: "CREATE TABLE buffered AS ins ENGINE = Buffer(currentDatabase(), 'ins', 1, 1, 1, 1, 1, 1, 1)",
      }),
    );
    expect(buffered!.type).toBe("ACCESS_DENIED");
    await client.command({ query: "DROP TABLE ins" });
  });

  test("query parameters in VALUES rows are bound as the values they stand for, as a server evaluates them", async () => {
    await client.command({
      query:
        "CREATE TABLE par (n UInt32, s String, d Date, t DateTime, x Decimal(10, 4), a Array(String), m Nullable(UInt8), e Enum8('on' = 1, 'off' = 2)) ENGINE = Memory",
    });
    // as the `clickhouse` npm client sends them: the whole INSERT as the query, the values as param_ parameters
    await client.command({
      query:
        "INSERT INTO par VALUES ({n:UInt32}, {s:String}, {d:Date}, {t:DateTime}, {x: Decimal(10,4)}, {a:Array(String)}, {m:Nullable(UInt8)}, {e:Enum8('on' = 1, 'off' = 2)}), (2, '{n:UInt32}', '2024-01-01', '2024-01-01 00:00:00', 1, [], NULL, 'off')",
      query_params: {
        n: 12345,
        s: `it's "quoted", a tab\tand {braces}`,
        d: "2022-08-18",
        t: "2022-08-18 19:07:00",
        x: "1234.6780",
        a: ["x", "it's"],
        m: null,
        e: "on",
      },
    });
    const stored = await client.query({ query: "SELECT * FROM par ORDER BY n", format: "JSONCompactEachRow" });
    expect(await stored.json()).toEqual([
      [2, "{n:UInt32}", "2024-01-01", "2024-01-01 00:00:00", 1, [], null, "off"], // in a string: left alone
      [
        12345,
        `it's "quoted", a tab\tand {braces}`,
        "2022-08-18",
        "2022-08-18 19:07:00",
        1234.678,
        ["x", "it's"],
        null,
        "on",
      ],
    ]);
    const missing = await failure(client.command({ query: "INSERT INTO par (n) VALUES ({nothing:UInt32})" }));
    expect(missing!.type).toBe("UNKNOWN_QUERY_PARAMETER");
    await client.command({ query: "DROP TABLE par" });
  });

  test("a bare word is a syntax error, as on a server; a SETTINGS clause of allowed settings runs", async () => {
    const error = await failure(client.query({ query: "foobar" }));
    expect([error!.code, error!.type]).toEqual(["62", "SYNTAX_ERROR"]);
    const settings = await client.query({
      query: "SELECT count() AS n FROM numbers(10) SETTINGS max_block_size = 1, max_threads = 1",
      format: "JSONEachRow",
    });
    expect(await settings.json()).toEqual([{ n: 10 }]);
    const refused = await failure(client.query({ query: "SELECT 1 SETTINGS max_threads = 1000" }));
    expect(refused!.type).toBe("READONLY");
  });
});

describe.skipIf(!embedded)("ingest first", () => {
  test("a long query on the port never holds up ingest: a batch is stored while the query still runs", async () => {
    const service = await startService({ PUBLIC_API_KEYS: KEY, QUERY_PORT: "0", QUERY_TIMEOUT_S: "10" });
    try {
      const order: string[] = [];
      // two seconds of sleeping, a row at a time
      const query = service
        .query!.fetch("/?max_block_size=1", { method: "POST", body: "SELECT sum(sleepEachRow(0.5)) FROM numbers(4)" })
        .then(async (response) => {
          expect([response.status, await response.text()]).toEqual([200, "0\n"]);
          order.push("query answered");
        });
      await Bun.sleep(300); // the query is running
      const batch = [{ event: "during_query", distinct_id: "user-x" }];
      expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
      order.push("batch stored");
      await query;
      expect(order).toEqual(["batch stored", "query answered"]);
    } finally {
      await service.stop();
    }
  });
});
