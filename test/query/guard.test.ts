import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Logger, Metrics, storageObserver } from "../../src/telemetry";
import { send, startService, type TestService } from "../helpers/service";

// What a port user with writes allowed (QUERY_READONLY=0) can do to the service itself: nothing that runs later
// without a client, outside the port's limits, and nothing that makes POST /batch/ fail for good. Each attack is
// checked for the port's answer and for the service afterwards: the count of events, and /batch/ still 200.

const embedded = !process.env.CLICKHOUSE_URL;
const KEY = "key-1";

describe.skipIf(!embedded)("a writable port and the ingest path", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ PUBLIC_API_KEYS: KEY, QUERY_PORT: "0", QUERY_READONLY: "0" });
  });
  afterAll(() => service.stop());

  const post = (sql: string, search = "") => service.query!.fetch(`/${search}`, { method: "POST", body: sql });
  const batch = (event: string) => send(service, { api_key: KEY, batch: [{ event, distinct_id: "user-1" }] });
  const count = async (sql: string) => Number(await (await post(sql)).text());
  const events = () => count("SELECT count() FROM events");
  const database = () => service.config.clickhouse.database;

  /** Sends each statement; returns those not answered with `code` (as `statement → answer`). */
  async function refused(statements: readonly string[], code: string, search = ""): Promise<string[]> {
    const wrong: string[] = [];
    for (const sql of statements) {
      const response = await post(sql, search);
      const text = await response.text();
      if (response.headers.get("x-clickhouse-exception-code") !== code || !text.startsWith(`Code: ${code}.`)) {
        wrong.push(`${sql} → ${response.status} ${text.slice(0, 200)}`);
      }
    }
    return wrong;
  }

  test("nothing runs later without a client: refreshable and window views, Buffer, background engines, dictionaries", async () => {
    expect((await batch("before")).status).toBe(200);
    const before = await events();
    expect(before).toBeGreaterThan(0);
    expect((await post("CREATE TABLE own (a UInt64, s String) ENGINE = MergeTree ORDER BY a")).status).toBe(200);
    expect((await post("CREATE MATERIALIZED VIEW own_mv ENGINE = Memory AS SELECT a FROM own")).status).toBe(200);
    const statements = [
      // the red team's: events doubled every second until the disk filled
      "CREATE MATERIALIZED VIEW grow REFRESH EVERY 1 SECOND APPEND TO events AS SELECT * FROM events",
      "CREATE MATERIALIZED VIEW spin REFRESH EVERY 1 SECOND ENGINE = Memory AS SELECT count() FROM numbers(1000000000000)",
      "CREATE OR REPLACE MATERIALIZED VIEW own_mv REFRESH AFTER 1 SECOND ENGINE = Memory AS SELECT a FROM own",
      "CREATE MATERIALIZED VIEW IF NOT EXISTS later REFRESH EVERY 1 HOUR TO own EMPTY AS SELECT 1 AS a, '' AS s",
      "ALTER TABLE own_mv MODIFY REFRESH EVERY 1 SECOND",
      "CREATE WINDOW VIEW w ENGINE = Memory AS SELECT count() AS c FROM own GROUP BY tumble(now(), toIntervalSecond(1))",
      // a Buffer flushes into its table on a timer, and runs that table's materialized views then
      "CREATE TABLE buffered AS own ENGINE = Buffer(currentDatabase(), 'own', 1, 1, 1, 1, 1, 1, 1)",
      "CREATE TABLE buffered AS events ENGINE = Buffer(currentDatabase(), 'events', 1, 1, 1, 1, 1, 1, 1)",
      // engines that pull rows in the background, and dictionaries that reload on their LIFETIME
      "CREATE TABLE k (a String) ENGINE = Kafka('127.0.0.1:1', 't', 'g', 'JSONEachRow')",
      // (this engine has no RabbitMQ or NATS: with their settings it refuses the statement itself)
      "CREATE TABLE r (a String) ENGINE = RabbitMQ('127.0.0.1:1', 'x', 'JSONEachRow')",
      "CREATE TABLE n (a String) ENGINE = NATS('127.0.0.1:1', 's', 'JSONEachRow')",
      "CREATE TABLE q (a String) ENGINE = S3Queue('http://127.0.0.1:1/*', 'CSV') SETTINGS mode = 'unordered'",
      "CREATE TABLE z (a String) ENGINE = AzureQueue('http://127.0.0.1:1', 'c', '*', 'CSV') SETTINGS mode = 'unordered'",
      "CREATE TABLE fl (a String) ENGINE = FileLog('logs', 'CSV')",
      "CREATE TABLE u (a String) ENGINE = URL('http://127.0.0.1:1/', CSV)",
      "CREATE TABLE f (a String) ENGINE = File(CSV)",
      "CREATE DICTIONARY d (uuid UUID, event String) PRIMARY KEY uuid SOURCE(CLICKHOUSE(TABLE 'events')) LAYOUT(HASHED()) LIFETIME(1)",
    ];
    expect(await refused(statements, "497")).toEqual([]);
    // the engine's own controls are no statement the port takes, in either mode
    expect(await refused(["SYSTEM REFRESH VIEW own_mv", "SYSTEM START VIEWS", "SYSTEM START MERGES"], "164")).toEqual(
      [],
    );
    await Bun.sleep(1500); // a view refreshed each second would have run by now
    expect(await events()).toBe(before);
    const views = await (
      await post("SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name")
    ).text();
    expect(views).not.toMatch(/^(grow|spin|later|w|buffered|d)$/m);
    expect((await batch("after")).status).toBe(200);
    expect(await events()).toBe(before + 1);
    expect((await post("DROP TABLE own_mv")).status).toBe(200);
    expect((await post("DROP TABLE own")).status).toBe(200);
  }, 30_000);

  test("the service's own tables keep what every ingest write needs: constraints, columns, TTLs, views on them, drops and renames are refused", async () => {
    expect((await batch("before")).status).toBe(200);
    const before = await events();
    const db = `\`${database()}\``;
    expect((await post("CREATE TABLE own (a UInt64, s String) ENGINE = MergeTree ORDER BY a")).status).toBe(200);
    // a materialized view on the analyst's own table runs in the analyst's own inserts: fine
    expect((await post("CREATE MATERIALIZED VIEW own_mv ENGINE = Memory AS SELECT a FROM own")).status).toBe(200);
    const statements = [
      // the red team's: every POST /batch/ answered 500, which SDKs retry for ever
      "ALTER TABLE events ADD CONSTRAINT c CHECK 0",
      `ALTER TABLE ${db}.events ADD CONSTRAINT c CHECK 0`,
      "ALTER TABLE persons ADD CONSTRAINT c CHECK version = 0",
      "ALTER TABLE identity_facts ADD CONSTRAINT c ASSUME 0",
      "ALTER TABLE events ADD COLUMN boom UInt8 DEFAULT throwIf(1)",
      "ALTER TABLE events MODIFY COLUMN event UInt8",
      "ALTER TABLE events DROP COLUMN host",
      "ALTER TABLE events RENAME COLUMN host TO h",
      "ALTER TABLE events MODIFY TTL toDateTime(timestamp) + toIntervalSecond(throwIf(1))",
      "ALTER TABLE sessions MODIFY TTL toDate32(max_timestamp) + toIntervalDay(throwIf(1))",
      "ALTER TABLE events MODIFY SETTING ttl_only_drop_parts = 1, parts_to_throw_insert = 1",
      "ALTER TABLE events ADD INDEX boom throwIf(1) TYPE minmax",
      "ALTER TABLE person_distinct_ids MODIFY SETTING parts_to_throw_insert = 1",
      "ALTER TABLE events MODIFY ORDER BY (toDate(timestamp), event, cityHash64(distinct_id), cityHash64(uuid), host)",
      "ALTER TABLE events MODIFY COMMENT 'fine', DROP COLUMN ip", // one change among harmless ones is enough
      "ALTER TABLE sessions_mv MODIFY QUERY SELECT throwIf(1) AS x FROM events",
      // materialized views on them run inside every ingest insert
      "CREATE MATERIALIZED VIEW boom ENGINE = Memory AS SELECT throwIf(1) AS x FROM events",
      `CREATE MATERIALIZED VIEW boom TO own AS SELECT 1 AS a, '' AS s FROM ${db}.persons`,
      "CREATE MATERIALIZED VIEW boom ENGINE = Memory AS SELECT o.a FROM own AS o JOIN group_facts AS g ON 1",
      "ALTER TABLE own_mv MODIFY QUERY SELECT 1 AS a FROM events",
      // gone, moved or replaced
      "DROP TABLE events",
      "DROP TABLE IF EXISTS own, person_overrides",
      "DROP VIEW events_resolved",
      `DROP DATABASE ${db}`,
      "RENAME TABLE events TO old_events",
      "EXCHANGE TABLES own AND events",
      `RENAME TABLE own TO own2, ${db}.groups TO old_groups`,
      "CREATE OR REPLACE TABLE events (a UInt8) ENGINE = Memory",
      "REPLACE TABLE persons (a UInt8) ENGINE = Memory",
      "CREATE OR REPLACE VIEW events_resolved AS SELECT 1",
    ];
    expect(await refused(statements, "497")).toEqual([]);
    // what still runs on them: rows in and out, comments
    for (const sql of [
      "ALTER TABLE events MODIFY COMMENT 'the events'",
      // retention's own, as an instance sharing the database through the port sets it (EVENTS_RETENTION_DAYS)
      "ALTER TABLE events MODIFY SETTING materialize_ttl_recalculate_only = 1, ttl_only_drop_parts = 1",
      `ALTER TABLE ${db}.events MODIFY TTL toDate32(timestamp) + toIntervalDay(3651)`,
      "ALTER TABLE sessions MODIFY TTL toDate32(max_timestamp) + toIntervalDay(3651)",
      "ALTER TABLE events REMOVE TTL",
      "ALTER TABLE sessions REMOVE TTL",
      "ALTER TABLE events DELETE WHERE event = 'nothing such'",
      "DELETE FROM events WHERE event = 'nothing such either'",
      "INSERT INTO own SELECT number, 'x' FROM numbers(3)",
      // the analyst's own table takes any of it
      "ALTER TABLE own ADD CONSTRAINT positive CHECK a >= 0",
      "ALTER TABLE own ADD COLUMN extra UInt8 DEFAULT 1",
      "ALTER TABLE own MODIFY TTL toDateTime(a) + toIntervalYear(100)",
      "RENAME TABLE own TO own2",
      "DROP TABLE own_mv",
      "DROP TABLE own2",
    ]) {
      const response = await post(sql);
      expect([sql, response.status, await response.text()]).toEqual([sql, 200, ""]);
    }
    // a database of the analyst's own: its tables are theirs, whatever their names
    expect((await post("CREATE DATABASE analyst")).status).toBe(200);
    const theirs = "?database=analyst";
    expect((await post("CREATE TABLE events (a UInt8) ENGINE = MergeTree ORDER BY a", theirs)).status).toBe(200);
    expect((await post("ALTER TABLE events ADD CONSTRAINT c CHECK a > 0", theirs)).status).toBe(200);
    expect(await refused([`ALTER TABLE ${db}.events ADD CONSTRAINT c CHECK 0`], "497", theirs)).toEqual([]);
    expect((await post("DROP DATABASE analyst")).status).toBe(200);
    // and ingest goes on, every event stored
    expect((await batch("after")).status).toBe(200);
    expect(await events()).toBe(before + 1);
  }, 30_000);

  test("on the service's own tables rows, comments and partitions still change, and what an insert must satisfy can be taken away", async () => {
    expect((await batch("before")).status).toBe(200);
    const before = await events();
    for (const sql of [
      "ALTER TABLE events COMMENT COLUMN host 'the host'",
      "ALTER TABLE events DROP INDEX IF EXISTS nothing",
      "ALTER TABLE events DROP PROJECTION IF EXISTS nothing",
      "ALTER TABLE events DROP CONSTRAINT IF EXISTS nothing",
      "ALTER TABLE events DROP PARTITION ID '190001'",
      "ALTER TABLE events DETACH PARTITION ID '190001'",
      "ALTER TABLE events APPLY DELETED MASK",
      "TRUNCATE TABLE person_overrides",
    ]) {
      const response = await post(sql);
      expect([sql, response.status, await response.text()]).toEqual([sql, 200, ""]);
    }
    // the engine drops detached parts only with allow_drop_detached, which the port's allowlist refuses
    expect(
      await refused(["ALTER TABLE events DROP DETACHED PARTITION ID '190001'"], "164", "?allow_drop_detached=1"),
    ).toEqual([]);
    const detached = await post("ALTER TABLE events DROP DETACHED PARTITION ID '190001'");
    expect(detached.headers.get("x-clickhouse-exception-code")).not.toBe("497");
    expect(await refused([`RENAME DATABASE \`${database()}\` TO moved`], "497")).toEqual([]);
    expect((await batch("after")).status).toBe(200);
    expect(await events()).toBe(before + 1);
  });

  test("a mutation runs while its statement waits, within its time limit; one that fails or times out is killed", async () => {
    // four parts: the part a killed mutation is working on is finished first (some 3 s here)
    const create =
      "CREATE TABLE slow (a UInt64, s String) ENGINE = MergeTree ORDER BY a SETTINGS merge_max_block_size = 1000";
    expect((await post(create)).status).toBe(200);
    for (let part = 0; part < 4; part++) {
      expect((await post(`INSERT INTO slow SELECT number + ${part * 10_000}, 'x' FROM numbers(10000)`)).status).toBe(
        200,
      );
    }
    const unfinished = () =>
      count(
        "SELECT count() FROM system.mutations WHERE database = currentDatabase() AND table = 'slow' AND NOT is_done",
      );
    // 12 s of sleeping in the background pool, a row at a time
    const started = performance.now();
    const slow = await post(
      "ALTER TABLE slow UPDATE s = toString(sleepEachRow(0.0003)) WHERE 1",
      "?max_execution_time=1",
    );
    expect([slow.status, slow.headers.get("x-clickhouse-exception-code")]).toEqual([408, "159"]);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(await unfinished()).toBe(0);
    // a mutation that fails was retried for ever in the background
    const failing = await post("ALTER TABLE slow UPDATE s = toString(throwIf(a > 5)) WHERE 1");
    expect(failing.status).toBe(500);
    expect(await failing.text()).toContain("FUNCTION_THROW_IF_VALUE_IS_NON_ZERO");
    expect(await unfinished()).toBe(0);
    // a client may not leave its mutations to run on
    const settings = ["mutations_sync=0", "alter_sync=0", "lightweight_deletes_sync=0"];
    for (const setting of settings) {
      expect(await refused(["ALTER TABLE slow DELETE WHERE a = 1"], "164", `?${setting}`)).toEqual([]);
    }
    expect(await refused(["ALTER TABLE slow DELETE WHERE a = 1 SETTINGS mutations_sync = 0"], "164")).toEqual([]);
    const deleted = await post("ALTER TABLE slow DELETE WHERE a < 10", "?mutations_sync=1");
    expect([deleted.status, await count("SELECT count() FROM slow")]).toEqual([200, 39_990]);
    expect((await post("DROP TABLE slow")).status).toBe(200);
  }, 30_000);

  test("a location fact the service would never write (not an object), inserted through the port, fails no batch", async () => {
    for (const [i, text] of ["not json", "[1, 2]", "42"].entries()) {
      const id = `crafted-${i}`;
      const row =
        `('${id}', 'location', '', ('2026-01-01 00:00:00', 1), (1, '2026-01-01 00:00:00', 1, 0, '${text}'), ` +
        `(0, '2026-01-01 00:00:00', 1, '${text}'), (0, '1970-01-01 00:00:00', 0, ''), 1, '2026-01-01 00:00:00')`;
      const inserted = await post(
        `INSERT INTO identity_facts (distinct_id, kind, name, at, last_write, first_once, last_once, writes, written_at) VALUES ${row}`,
      );
      expect([inserted.status, await inserted.text()]).toEqual([200, ""]);
      const sent = await send(service, {
        api_key: KEY,
        batch: [{ event: "e", distinct_id: id, properties: { $set: { plan: "pro" }, $browser: "Firefox" } }],
      });
      expect([text, sent.status]).toEqual([text, 200]);
    }
    const stored = await count("SELECT count() FROM persons FINAL WHERE JSONExtractString(properties, 'plan') = 'pro'");
    expect(stored).toBeGreaterThanOrEqual(3);
  });

  test("a write the database refuses leaves nothing running: the port's next query is not held up", async () => {
    // an operator's own client, past the port (which refuses this): the table refuses every row
    await service.db.command(`ALTER TABLE ${service.db.table("events")} ADD CONSTRAINT refuse CHECK 0`);
    expect((await batch("refused")).status).toBe(503);
    // a failed insert that chDB kept listed as running, at the write path's priority, held every query of the
    // port back (seconds each): none is listed once the batch is answered
    const listed = await service.db.rows<{ query: string }>(
      "SELECT query FROM system.processes WHERE query LIKE 'INSERT%'",
    );
    expect(listed).toEqual([]);
    const response = await post("SELECT 1");
    expect([response.status, await response.text()]).toEqual([200, "1\n"]);
    // the port takes away what it would not have let in: how an operator undoes a constraint made before
    const dropped = await post("ALTER TABLE events DROP CONSTRAINT refuse");
    expect([dropped.status, await dropped.text()]).toEqual([200, ""]);
    expect((await batch("after")).status).toBe(200);
  });
});

describe.skipIf(!embedded)("a table that refuses the service's writes anyway (changed past the port)", () => {
  test("POST /batch/ says what an operator must fix: a 503 SDKs retry slowly, a log line and a metric; fixed, it is 200", async () => {
    const lines: Record<string, unknown>[] = [];
    const metrics = new Metrics();
    const log = new Logger("info", (line) => lines.push(JSON.parse(line)));
    const service = await startService({ PUBLIC_API_KEYS: KEY }, { observer: storageObserver(log, metrics) });
    const batch = () => send(service, { api_key: KEY, batch: [{ event: "e", distinct_id: "user-1" }] });
    try {
      await service.db.command(`ALTER TABLE ${service.db.table("persons")} ADD CONSTRAINT refuse CHECK version = 0`);
      const refused = await batch();
      // a 5xx keeps the events in the SDK's queue (a 4xx drops them, a 200 would lie); the message names the table
      // and ClickHouse's error, never its text, which quotes rows of other requests
      expect([refused.status, refused.headers.get("retry-after"), refused.body]).toEqual([
        503,
        "60",
        {
          status: "error",
          error:
            "The database refuses these events (VIOLATED_CONSTRAINT on table persons): an operator must fix the table; retry later",
        },
      ]);
      const told = lines.filter(
        (line) => line.msg === "the database refuses the service's writes: an operator must fix the table",
      );
      expect(told).toEqual([
        expect.objectContaining({
          level: "error",
          table: "persons",
          type: "VIOLATED_CONSTRAINT",
          code: "469",
          fix: "drop the constraint (ALTER TABLE … DROP CONSTRAINT)",
        }),
      ]);
      expect(await metrics.text()).toContain(
        'ingest_storage_refusals_total{table="persons",error="VIOLATED_CONSTRAINT"} 1',
      );
      await service.db.command(`ALTER TABLE ${service.db.table("persons")} DROP CONSTRAINT refuse`);
      expect((await batch()).status).toBe(200);
    } finally {
      await service.stop();
    }
  });
});
