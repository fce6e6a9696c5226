import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { loadConfig, PERSON_MATERIALIZED_BY_DEFAULT } from "../../src/config";
import { SchemaError } from "../../src/storage";
import type { ClickHouse } from "../../src/storage/clickhouse";
import { createSchema, eventPartition, SESSIONS_SET_ASIDE, schemaObjects } from "../../src/storage/schema";
import { ENTRY_PROPERTIES, SESSION_COLUMNS, UTC_MICROS } from "../../src/storage/schema/sessions";
import { literal } from "../../src/storage/sql";
import { Storage, storageOptions } from "../../src/write";
import { captured } from "../helpers/captured";
import { count, createTableQuery } from "../helpers/rows";
import { clickhouseEnv, openDb, send, startService, type TestService, uniqueDatabase } from "../helpers/service";

const KEY = "key-1";
let service: TestService;

beforeAll(async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, TYPED_PROPERTIES: "1" });
});
afterAll(() => service.stop());

describe("schema", () => {
  test("creating it again changes nothing, and a restarted storage sees the data", async () => {
    await send(service, { api_key: KEY, batch: [{ event: "kept", distinct_id: "user-schema" }] });
    await createSchema(service.db);
    const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: service.config.clickhouse.database });
    const reopened = await Storage.open(storageOptions(config));
    await reopened.ingest([]);
    await reopened.close();
    expect(await count(service.db, "events", "event = 'kept'")).toBe(1);
  });

  test("the tables have the columns the spec names", async () => {
    const columns = await service.db.rows<{ table: string; name: string; type: string }>(
      `SELECT table, name, type FROM system.columns WHERE database = ${literal(service.config.clickhouse.database)} ORDER BY table, position`,
    );
    const of = (table: string) =>
      Object.fromEntries(columns.filter((c) => c.table === table).map((c) => [c.name, c.type]));
    expect(of("events")).toMatchObject({
      uuid: "UUID",
      event: "String",
      properties: "String",
      timestamp: "DateTime64(6, 'UTC')",
      distinct_id: "String",
      person_id: "UUID",
      session_id: "String",
      window_id: "String",
      current_url: "String",
      host: "String",
    });
    expect(of("persons")).toMatchObject({
      id: "UUID",
      distinct_id: "String",
      properties: "String",
      is_identified: "UInt8",
      is_deleted: "UInt8",
      version: "UInt64",
    });
    expect(of("person_distinct_ids")).toMatchObject({
      distinct_id: "String",
      person_id: "UUID",
      is_deleted: "UInt8",
      version: "UInt64",
    });
    expect(Object.keys(of("sessions"))).toContain("session_id");
  });

  test("persons and links are stored in small granules, for reads by key", async () => {
    const granularity = async (table: string) =>
      /index_granularity = (\d+)/.exec(await createTableQuery(service.db, table))?.[1];
    expect(await granularity("persons")).toBe("1024");
    expect(await granularity("person_distinct_ids")).toBe("1024");
  });

  test("a storage on a database that does not exist yet creates it", async () => {
    const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: uniqueDatabase() });
    const storage = await Storage.open(storageOptions(config));
    await storage.close();
    const db = await openDb(config.clickhouse.database);
    try {
      expect(await count(db, "events")).toBe(0);
    } finally {
      await db.command(`DROP DATABASE \`${config.clickhouse.database}\``);
      await db.close();
    }
  });
});

describe("the partitions of events", () => {
  test("a day from 2020 to 2059, a month before and after, as the writer splits inserts; made-up dates make few", async () => {
    const at = [
      "1900-01-01T00:00:00Z",
      "2019-12-31T23:59:59.999999Z",
      "2020-01-01T00:00:00Z",
      "2026-11-27T12:00:00Z",
      "2059-12-31T23:59:59.999999Z",
      "2060-01-01T00:00:00Z",
      "2299-12-31T23:59:59Z",
    ];
    // and what a client making up dates sends: a day each over 1,000 days of 1950–1952 and of 2100–2102
    const madeUp = [1950, 2100].flatMap((year) =>
      Array.from({ length: 1_000 }, (_, i) => new Date(Date.UTC(year, 0, 1 + i)).toISOString()),
    );
    const batch = [...at, ...madeUp].map((timestamp, i) => ({ event: "dated", distinct_id: `d-${i}`, timestamp }));
    const sent = await send(service, { api_key: KEY, batch });
    expect(sent.status).toBe(200);
    const rows = await service.db.rows<{ at: string; partition: string }>(
      `SELECT toString(timestamp) AS at, _partition_id AS partition FROM ${service.db.table("events")}
       WHERE event = 'dated' AND distinct_id IN (${at.map((_, i) => literal(`d-${i}`)).join(", ")}) ORDER BY timestamp`,
    );
    expect(rows.map((row) => row.partition)).toEqual([
      "190001",
      "201912",
      "20200101",
      "20261127",
      "20591231",
      "206001",
      "229912",
    ]);
    for (const row of rows) expect(eventPartition(row.at).replaceAll("-", "")).toBe(row.partition);
    const [partitions] = await service.db.rows<{ n: string }>(
      `SELECT toString(uniqExact(_partition_id)) AS n FROM ${service.db.table("events")} WHERE event = 'dated'`,
    );
    expect(Number(partitions!.n)).toBe(7 + 2 * 33); // 2,000 days made up: 33 months each time
  });
});

describe("sessions", () => {
  test("events carrying $session_id are summed up per session", async () => {
    const at = (second: number) => `2024-07-01T10:00:${String(second).padStart(2, "0")}Z`;
    const sent = await send(service, {
      api_key: KEY,
      batch: [
        {
          event: "$pageview",
          distinct_id: "anon-s",
          timestamp: at(0),
          properties: { $session_id: "s-1", $current_url: "https://a.example/landing" },
        },
        { event: "clicked", distinct_id: "anon-s", timestamp: at(5), properties: { $session_id: "s-1" } },
        {
          event: "$pageview",
          distinct_id: "user-s",
          timestamp: at(9),
          properties: { $session_id: "s-1", $current_url: "https://a.example/pricing" },
        },
        {
          event: "$pageview",
          distinct_id: "other",
          timestamp: at(3),
          properties: { $session_id: "s-2", $current_url: "https://a.example/docs" },
        },
        { event: "no_session", distinct_id: "other", timestamp: at(4) },
      ],
    });
    expect(sent.status).toBe(200);
    // a later request adds to the same session
    await send(service, {
      api_key: KEY,
      batch: [{ event: "$pageleave", distinct_id: "user-s", timestamp: at(30), properties: { $session_id: "s-1" } }],
    });

    interface SessionRow {
      session_id: string;
      distinct_id: string;
      started: string;
      ended: string;
      events: string | number;
      pageviews: string | number;
      entry_url: string;
      exit_url: string;
    }
    const sessions = await service.db.rows<SessionRow>(
      `SELECT session_id, argMinMerge(distinct_id) AS distinct_id, toString(min(min_timestamp)) AS started,
         toString(max(max_timestamp)) AS ended, uniqMerge(event_count) AS events, uniqMerge(pageview_count) AS pageviews,
         argMinMerge(entry_url) AS entry_url, argMaxMerge(exit_url) AS exit_url
       FROM ${service.db.table("sessions")} GROUP BY session_id ORDER BY session_id`,
    );
    expect(sessions.map((s) => ({ ...s, events: Number(s.events), pageviews: Number(s.pageviews) }))).toEqual([
      {
        session_id: "s-1",
        distinct_id: "anon-s",
        started: "2024-07-01 10:00:00.000000",
        ended: "2024-07-01 10:00:30.000000",
        events: 4,
        pageviews: 2,
        entry_url: "https://a.example/landing",
        exit_url: "https://a.example/pricing",
      },
      {
        session_id: "s-2",
        distinct_id: "other",
        started: "2024-07-01 10:00:03.000000",
        ended: "2024-07-01 10:00:03.000000",
        events: 1,
        pageviews: 1,
        entry_url: "https://a.example/docs",
        exit_url: "https://a.example/docs",
      },
    ]);
  });
});

describe("an existing database that drifted from the schema", () => {
  type Warned = ReturnType<typeof spyOn<Console, "warn">>;

  /**
   * Runs `check` on a database the service made and closed, with `console.warn` caught (the schema check's
   * repairs are logged there), and drops the database after, whatever happened.
   */
  async function onFreshDatabase(
    check: (config: ReturnType<typeof loadConfig>, db: ClickHouse, warned: Warned) => Promise<void>,
  ): Promise<void> {
    const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: uniqueDatabase() });
    await (await Storage.open(storageOptions(config))).close();
    const db = await openDb(config.clickhouse.database);
    const warned = spyOn(console, "warn").mockImplementation(() => {});
    try {
      await check(config, db, warned);
    } finally {
      warned.mockRestore();
      await db.command(`DROP DATABASE \`${config.clickhouse.database}\``);
      await db.close();
    }
  }

  /** Makes `sessions` and its view again as versions before the web-analytics columns made them. */
  async function sessionsAsBefore(db: ClickHouse): Promise<void> {
    const [mv, sessions, events] = ["sessions_mv", "sessions", "events"].map((name) => db.table(name));
    const at = "DateTime64(6, 'UTC')";
    await db.command(`DROP VIEW ${mv}`);
    await db.command(`DROP TABLE ${sessions}`);
    await db.command(
      `CREATE TABLE ${sessions} (session_id String, distinct_id AggregateFunction(argMin, String, ${at}),
         min_timestamp SimpleAggregateFunction(min, ${at}), max_timestamp SimpleAggregateFunction(max, ${at}),
         event_count AggregateFunction(uniqExact, UUID), pageview_count AggregateFunction(uniqExact, UUID),
         entry_url AggregateFunction(argMin, String, ${at}), exit_url AggregateFunction(argMax, String, ${at}))
       ENGINE = AggregatingMergeTree ORDER BY session_id`,
    );
    await db.command(
      `CREATE MATERIALIZED VIEW ${mv} TO ${sessions} AS SELECT session_id,
         argMinState(distinct_id, timestamp) AS distinct_id, min(timestamp) AS min_timestamp,
         max(timestamp) AS max_timestamp, uniqExactState(uuid) AS event_count,
         uniqExactIfState(uuid, event = '$pageview') AS pageview_count,
         argMinIfState(current_url, timestamp, current_url != '') AS entry_url,
         argMaxIfState(current_url, timestamp, current_url != '') AS exit_url
       FROM ${events} WHERE session_id != '' GROUP BY session_id`,
    );
  }

  test("sessions from before the web-analytics columns are made again from events: old sessions gain them too", async () => {
    await onFreshDatabase(async (config, db, warned) => {
      await sessionsAsBefore(db);
      const pageview = (second: number, properties: Record<string, unknown>) => ({
        event: "$pageview",
        distinct_id: "u",
        timestamp: `2024-07-03T10:00:0${second}Z`,
        properties: { $session_id: "s", $current_url: `https://a.example/${second}`, ...properties },
      });
      // stored by the old view, then the upgrade, then a later event of the same session
      await db.command(
        `INSERT INTO ${db.table("events")} (uuid, event, properties, timestamp, distinct_id, person_id, session_id, current_url, created_at)
         VALUES ('0190b4a1-0000-7000-8000-0000000000b1', '$pageview', '{"utm_source":"old"}', '2024-07-03 10:00:01', 'u',
                 '0190b4a1-0000-7000-8000-0000000000b2', 's', 'https://a.example/1', '2024-07-03 10:00:01')`,
      );
      const storage = await Storage.open(storageOptions(config));
      await storage.ingest((await captured([pageview(2, { utm_source: "new" })])).events);
      await storage.ingest((await captured([pageview(3, { utm_source: "later" })])).events);
      await storage.close();
      const said = warned.mock.calls.map((call) => String(call[0]));
      expect(said).toContainEqual(expect.stringContaining("sessions` is made again from 1 events (its event_count is"));
      // the entry is the old event's, read from events by the rebuild
      expect(
        await db.rows(
          `SELECT argMinMerge(entry_url) AS url, argMinMerge(entry_utm_source) AS utm_source,
             toString(uniqMerge(pageview_count)) AS pageviews, toString(uniqMerge(screen_count)) AS screens
           FROM ${db.table("sessions")} GROUP BY session_id`,
        ),
      ).toEqual([{ url: "https://a.example/1", utm_source: "old", pageviews: "3", screens: "0" }]);
    });
  });

  /**
   * The statements of `sessions` and its view as schema version 2 made them: the entry one column, `entry`, the
   * `argMin` state of a tuple of its properties, which one `JSONExtract` parsed and two casts renamed (the country's
   * expression is shortened: it only reads `geoip`).
   */
  function sessionsOfVersion2(db: ClickHouse): [table: string, view: string] {
    const [mv, sessions, events] = ["sessions_mv", "sessions", "events"].map((name) => db.table(name));
    const key = `Tuple(${UTC_MICROS}, UUID)`;
    const names = Object.keys(ENTRY_PROPERTIES).map((column) => column.replace(/^entry_/, ""));
    const tuple = `Tuple(${names.map((name) => `${name} String`).join(", ")})`;
    const columns = Object.entries(SESSION_COLUMNS)
      .filter(([name]) => ENTRY_PROPERTIES[name] === undefined)
      .map(([name, type]) =>
        name === "entry_country"
          ? `entry AggregateFunction(argMin, ${tuple}, ${key}), ${name} ${type}`
          : `${name} ${type}`,
      );
    const parsed = literal(
      `Tuple(${Object.values(ENTRY_PROPERTIES)
        .map((p) => `\`${p}\` String`)
        .join(", ")})`,
    );
    const unnamed = literal(`Tuple(${names.map(() => "String").join(", ")})`);
    const isView = "event IN ('$pageview', '$screen')";
    const entry = `CAST(CAST(if(${isView}, JSONExtract(properties, ${parsed}), JSONExtract('{}', ${parsed})), ${unnamed}), ${literal(tuple)})`;
    return [
      `CREATE TABLE ${sessions} (${columns.join(", ")}) ENGINE = AggregatingMergeTree ORDER BY session_id`,
      `CREATE MATERIALIZED VIEW ${mv} TO ${sessions} AS SELECT session_id,
         argMinState(distinct_id, timestamp) AS distinct_id, min(timestamp) AS min_timestamp,
         max(timestamp) AS max_timestamp, uniqState(uuid) AS event_count,
         uniqIfState(uuid, event = '$pageview') AS pageview_count,
         argMinIfState(current_url, timestamp, current_url != '') AS entry_url,
         argMaxIfState(current_url, timestamp, current_url != '') AS exit_url,
         uniqIfState(uuid, event = '$screen') AS screen_count, uniqIfState(uuid, event = '$autocapture') AS autocapture_count,
         argMinIfState(${entry}, (timestamp, uuid), ${isView}) AS entry,
         argMinIfState(if(${isView}, JSONExtractString(geoip, '$geoip_country_code'), ''), (timestamp, uuid), ${isView}) AS entry_country
       FROM ${events} WHERE session_id != '' GROUP BY session_id`,
    ];
  }

  /** Makes `sessions` and its view as `statements` say, in place of this version's. */
  async function sessionsAs(db: ClickHouse, statements: readonly string[]): Promise<void> {
    await db.command(`DROP VIEW ${db.table("sessions_mv")}`);
    await db.command(`DROP TABLE ${db.table("sessions")}`);
    for (const statement of statements) await db.command(statement);
  }

  /** `sessions` and its view as schema version 1 made them: version 2's, with `uniqExact` counts. */
  async function sessionsOfVersion1(db: ClickHouse): Promise<void> {
    const exact = (sql: string) =>
      sql
        .replaceAll("AggregateFunction(uniq, UUID)", "AggregateFunction(uniqExact, UUID)")
        .replace(/\buniq(If)?State\(/g, "uniqExact$1State(");
    const [table, view] = sessionsOfVersion2(db).map(exact);
    expect(view).toContain(`uniqExactIfState(uuid, event = '$pageview')`);
    await sessionsAs(db, [table!, view!]);
    expect(
      await db.rows(
        `SELECT DISTINCT type FROM system.columns WHERE database = ${literal(db.database)} AND table = 'sessions' AND name LIKE '%count'`,
      ),
    ).toEqual([{ type: "AggregateFunction(uniqExact, UUID)" }]);
  }

  /** Events of two sessions over two days, as stored before the upgrade: one of them twice (a retry, not merged yet). */
  async function oldEvents(db: ClickHouse): Promise<void> {
    const row = (n: number, event: string, at: string, session: string, url = "") =>
      `('0190b4a1-0000-7000-8000-${String(n).padStart(12, "0")}', '${event}', '{"utm_source":"u${n}"}', '${at}', 'old-${session}', '0190b4a1-0000-7000-8000-00000000ffff', '${session}', '${url}', '${at}')`;
    const rows = [
      row(1, "$pageview", "2024-07-03 23:59:50", "a", "https://a.example/in"),
      row(2, "$autocapture", "2024-07-03 23:59:55", "a"),
      row(3, "$pageview", "2024-07-04 00:00:20", "a", "https://a.example/out"),
      row(4, "$pageview", "2024-07-04 09:00:00", "b", "https://a.example/b"),
      row(4, "$pageview", "2024-07-04 09:00:00", "b", "https://a.example/b"),
    ];
    for (const values of [rows.slice(0, 4), rows.slice(4)])
      await db.command(
        `INSERT INTO ${db.table("events")} (uuid, event, properties, timestamp, distinct_id, person_id, session_id, current_url, created_at)
         VALUES ${values.join(", ")}`,
      );
  }

  const readSessions = (db: ClickHouse) =>
    db.rows(
      `SELECT session_id, argMinMerge(distinct_id) AS distinct_id, toString(uniqMerge(event_count)) AS events,
         toString(uniqMerge(pageview_count)) AS pageviews, toString(uniqMerge(autocapture_count)) AS autocaptures,
         argMinMerge(entry_url) AS entry_url, argMaxMerge(exit_url) AS exit_url, argMinMerge(entry_utm_source) AS utm_source,
         toString(dateDiff('second', min(min_timestamp), max(max_timestamp))) AS duration
       FROM ${db.table("sessions")} GROUP BY session_id ORDER BY session_id`,
    );
  const rebuilt = [
    {
      session_id: "a",
      distinct_id: "old-a",
      events: "3",
      pageviews: "2",
      autocaptures: "1",
      entry_url: "https://a.example/in",
      exit_url: "https://a.example/out",
      utm_source: "u1",
      duration: "30",
    },
    {
      session_id: "b",
      distinct_id: "old-b",
      events: "1",
      pageviews: "1",
      autocaptures: "0",
      entry_url: "https://a.example/b",
      exit_url: "https://a.example/b",
      utm_source: "u4",
      duration: "0",
    },
  ];

  test("sessions of schema version 1 (uniqExact counts) are made again from events at startup, and the view feeds the new one", async () => {
    await onFreshDatabase(async (config, db, warned) => {
      await sessionsOfVersion1(db);
      await oldEvents(db);
      const storage = await Storage.open(storageOptions(config));
      const said = warned.mock.calls.map((call) => String(call[0]));
      expect(said).toContainEqual(
        expect.stringContaining(
          "sessions` is made again from 5 events (its event_count is AggregateFunction(uniqExact, UUID), where this version writes AggregateFunction(uniq, UUID))",
        ),
      );
      expect(said).toContainEqual(expect.stringMatching(/sessions` made again from 5 events in [\d.]+ s\.$/));
      expect(
        await db.rows(
          `SELECT name, type FROM system.columns WHERE database = ${literal(db.database)} AND table = 'sessions' AND name LIKE '%count' ORDER BY name`,
        ),
      ).toEqual(
        ["autocapture_count", "event_count", "pageview_count", "screen_count"].map((name) => ({
          name,
          type: "AggregateFunction(uniq, UUID)",
        })),
      );
      expect(
        await db.rows(
          `SELECT name FROM system.tables WHERE database = ${literal(db.database)} AND name LIKE 'sessions%' ORDER BY name`,
        ),
      ).toEqual([{ name: "sessions" }, { name: "sessions_mv" }]);
      expect(await readSessions(db)).toEqual(rebuilt);
      // after: a retry of an old event counts once, a new one counts, through the new view
      const again = {
        event: "$pageview",
        distinct_id: "old-b",
        uuid: "0190b4a1-0000-7000-8000-000000000004",
        timestamp: "2024-07-04T09:00:00Z",
        properties: { $session_id: "b", $current_url: "https://a.example/b", utm_source: "u4" },
      };
      const later = { ...again, uuid: "0190b4a1-0000-7000-8000-000000000005", timestamp: "2024-07-04T09:00:05Z" };
      await storage.ingest((await captured([again, later])).events);
      await storage.close();
      const [, b] = (await readSessions(db)) as [unknown, Record<string, string>];
      expect([b.events, b.pageviews, b.duration]).toEqual(["2", "2", "5"]);
    });
  });

  test("sessions of schema version 2 (the entry one tuple) are made again from events at startup: old sessions gain the entry's columns", async () => {
    await onFreshDatabase(async (config, db, warned) => {
      await sessionsAs(db, sessionsOfVersion2(db));
      await oldEvents(db);
      // the old view wrote the old layout
      expect(
        await db.rows(
          `SELECT argMinMerge(entry).utm_source AS utm_source FROM ${db.table("sessions")} GROUP BY session_id ORDER BY session_id`,
        ),
      ).toEqual([{ utm_source: "u1" }, { utm_source: "u4" }]);
      const storage = await Storage.open(storageOptions(config));
      const said = warned.mock.calls.map((call) => String(call[0]));
      expect(said).toContainEqual(
        expect.stringContaining(
          "sessions` is made again from 5 events (it has no entry_referring_domain, which this version writes)",
        ),
      );
      const columns = await db.rows<{ name: string; type: string }>(
        `SELECT name, type FROM system.columns WHERE database = ${literal(db.database)} AND table = 'sessions' ORDER BY position`,
      );
      expect(Object.fromEntries(columns.map((column) => [column.name, column.type]))).toEqual(SESSION_COLUMNS);
      expect(await readSessions(db)).toEqual(rebuilt);
      // a later pageview of session b, with other properties, through the new view: b's entry stays its first
      const later = {
        event: "$pageview",
        distinct_id: "old-b",
        uuid: "0190b4a1-0000-7000-8000-000000000005",
        timestamp: "2024-07-04T09:00:05Z",
        properties: { $session_id: "b", $current_url: "https://a.example/b2", utm_source: "later", $browser: "Safari" },
      };
      await storage.ingest((await captured([later])).events);
      await storage.close();
      const [, b] = (await readSessions(db)) as [unknown, Record<string, string>];
      expect([b.pageviews, b.utm_source, b.exit_url]).toEqual(["2", "u4", "https://a.example/b2"]);
    });
  });

  test("a rebuild stopped before its refill was done is finished at the next start", async () => {
    await onFreshDatabase(async (config, db, warned) => {
      await sessionsOfVersion1(db);
      await oldEvents(db);
      // as a start killed after the table was set aside: the new table and view exist, empty
      await db.command(`DROP VIEW ${db.table("sessions_mv")}`);
      await db.command(`RENAME TABLE ${db.table("sessions")} TO ${db.table(SESSIONS_SET_ASIDE)}`);
      for (const name of ["sessions", "sessions_mv"])
        await db.command(schemaObjects(db.database).find((object) => object.name === name)!.create);
      expect(await readSessions(db)).toEqual([]);
      await (await Storage.open(storageOptions(config))).close();
      const said = warned.mock.calls.map((call) => String(call[0]));
      expect(said).toContainEqual(expect.stringContaining("(a rebuild begun before was not finished)"));
      expect(await readSessions(db)).toEqual(rebuilt);
      expect(
        await db.rows(
          `SELECT name FROM system.tables WHERE database = ${literal(db.database)} AND name = ${literal(SESSIONS_SET_ASIDE)}`,
        ),
      ).toEqual([]);
    });
  });

  test("a missing column is added back at startup, and its values are stored again", async () => {
    await onFreshDatabase(async (config, db, warned) => {
      await db.command(`ALTER TABLE ${db.table("events")} DROP COLUMN host`);
      const storage = await Storage.open(storageOptions(config));
      expect(String(warned.mock.calls[0]?.[0])).toContain("events`.host is missing");
      await storage.ingest(
        (await captured([{ event: "e", distinct_id: "u", properties: { $host: "h.example" } }])).events,
      );
      await storage.close();
      expect(await db.rows(`SELECT host FROM ${db.table("events")}`)).toEqual([{ host: "h.example" }]);
    });
  });

  test("a view made before a column existed is made again with it, after the column is added", async () => {
    await onFreshDatabase(async (config, db, warned) => {
      await db.command(`DROP VIEW ${db.table("events_resolved")}`);
      await db.command(`ALTER TABLE ${db.table("events")} DROP COLUMN ip`);
      await db.command(`CREATE VIEW ${db.table("events_resolved")} AS SELECT uuid, event FROM ${db.table("events")}`);
      const storage = await Storage.open(storageOptions(config));
      await storage.ingest(
        (await captured([{ event: "e", distinct_id: "u", properties: { $ip: "192.0.2.1" } }])).events,
      );
      await storage.close();
      expect(await db.rows(`SELECT ip, distinct_id FROM ${db.table("events_resolved")}`)).toEqual([
        { ip: "192.0.2.1", distinct_id: "u" },
      ]);
      const said = warned.mock.calls.map((call) => String(call[0]));
      expect(said.some((line) => line.includes("events_resolved`.distinct_id is missing"))).toBe(true);
    });
  });

  test("a database from before events.geoip gets the column, and events_resolved its location in properties", async () => {
    await onFreshDatabase(async (config, db, warned) => {
      await db.command(`DROP VIEW ${db.table("events_resolved")}`);
      await sessionsAsBefore(db); // whose view did not read geoip
      await db.command(`ALTER TABLE ${db.table("events")} DROP COLUMN geoip`);
      // as the view was: properties as stored
      await db.command(`CREATE VIEW ${db.table("events_resolved")} AS SELECT * FROM ${db.table("events")}`);
      const storage = await Storage.open(storageOptions(config));
      const [event] = (await captured([{ event: "e", distinct_id: "u", properties: { plan: "pro" } }])).events;
      const location = { properties: { $geoip_country_code: "DE" }, json: '{"$geoip_country_code":"DE"}' };
      await storage.ingest([{ ...event!, location }]);
      await storage.close();
      expect(await db.rows(`SELECT properties, geoip FROM ${db.table("events")}`)).toEqual([
        { properties: '{"plan":"pro"}', geoip: '{"$geoip_country_code":"DE"}' },
      ]);
      expect(await db.rows(`SELECT properties, geoip FROM ${db.table("events_resolved")}`)).toEqual([
        { properties: '{"plan":"pro","$geoip_country_code":"DE"}', geoip: '{"$geoip_country_code":"DE"}' },
      ]);
      const said = warned.mock.calls.map((call) => String(call[0]));
      expect(said.some((line) => line.includes("events`.geoip is missing"))).toBe(true);
    });
  });

  test("a database from before persons on events gets the columns; old rows read them empty, new ones are filled", async () => {
    await onFreshDatabase(async (config, db, warned) => {
      await db.command(`DROP VIEW ${db.table("events_resolved")}`);
      // nor the person property columns, which read person_properties
      const personColumns = PERSON_MATERIALIZED_BY_DEFAULT.map((key) => `DROP COLUMN \`pmat_${key}\``).join(", ");
      await db.command(
        `ALTER TABLE ${db.table("events")} ${personColumns}, DROP COLUMN person_properties, DROP COLUMN person_created_at`,
      );
      await db.command(`CREATE VIEW ${db.table("events_resolved")} AS SELECT * FROM ${db.table("events")}`);
      await db.command(
        `INSERT INTO ${db.table("events")} (uuid, event, properties, timestamp, distinct_id, person_id, created_at)
         VALUES ('0190b4a1-0000-7000-8000-0000000000a1', 'old', '{}', '2026-01-01 00:00:00', 'u',
                 '0190b4a1-0000-7000-8000-0000000000a2', '2026-01-01 00:00:00')`, // literals: a server's VALUES
      );
      const storage = await Storage.open(storageOptions({ ...config, personsOnEvents: true }));
      const { events } = await captured([{ event: "new", distinct_id: "u", properties: { $set: { plan: "pro" } } }]);
      await storage.ingest(events);
      await storage.close();
      const read = `SELECT event, person_properties, toString(person_created_at) > '2000' AS dated FROM ${db.table("events_resolved")} ORDER BY event`;
      expect(
        (await db.rows<Record<string, unknown>>(read)).map((row) => [
          row.event,
          row.person_properties,
          Number(row.dated),
        ]),
      ).toEqual([
        ["new", '{"plan":"pro"}', 1],
        ["old", "", 0],
      ]);
      const said = warned.mock.calls.map((call) => String(call[0]));
      expect(said.some((line) => line.includes("events`.person_properties is missing"))).toBe(true);
      expect(said.some((line) => line.includes("events`.pmat_$initial_os is missing"))).toBe(true);
    });
  });

  test("TYPED_PROPERTIES=1 on a database without properties_typed adds it; old rows read it from their properties", async () => {
    await onFreshDatabase(async (config, db, warned) => {
      // made by a version before the column, or with TYPED_PROPERTIES=0: an event stored without it
      await db.command(
        `INSERT INTO ${db.table("events")} (uuid, event, properties, timestamp, distinct_id, person_id, created_at)
         VALUES ('0190b4a1-0000-7000-8000-0000000000a1', 'old', '{"plan":"pro"}', '2026-01-01 00:00:00', 'u',
                 '0190b4a1-0000-7000-8000-0000000000a2', '2026-01-01 00:00:00')`,
      );
      const typed = loadConfig({
        ...clickhouseEnv(),
        CLICKHOUSE_DATABASE: config.clickhouse.database,
        TYPED_PROPERTIES: "1",
      });
      const storage = await Storage.open(storageOptions(typed));
      await storage.ingest((await captured([{ event: "new", distinct_id: "u", properties: { plan: "team" } }])).events);
      await storage.close();
      const said = warned.mock.calls.map((call) => String(call[0]));
      expect(said.some((line) => line.includes("events`.properties_typed is missing"))).toBe(true);
      for (const table of ["events", "events_resolved"]) {
        expect(
          await db.rows(`SELECT event, properties_typed.plan AS plan FROM ${db.table(table)} ORDER BY event DESC`),
        ).toEqual([
          { event: "old", plan: "pro" },
          { event: "new", plan: "team" },
        ]);
      }
    });
  });

  test("an enum from before a kind of fact existed is widened at startup, and its rows read as they were", async () => {
    await onFreshDatabase(async (config, db, warned) => {
      const facts = db.table("identity_facts");
      // a key column cannot be narrowed: the table is made again as 0.2.0 made it
      const [{ statement }] = (await db.rows<{ statement: string }>(`SHOW CREATE TABLE ${facts}`)) as [
        { statement: string },
      ];
      await db.command(`DROP TABLE ${facts}`);
      const older = statement.replace(", 'once' = 5, 'location' = 6)", ")");
      expect(older).not.toBe(statement);
      await db.command(older);
      await db.command(`INSERT INTO ${facts} (distinct_id, kind, name) VALUES ('old', 'property', 'plan')`);
      const storage = await Storage.open(storageOptions(config));
      expect(String(warned.mock.calls[0]?.[0])).toContain("identity_facts`.kind is missing or narrower than Enum8(");
      await storage.ingest(
        (
          await captured([
            { event: "e", distinct_id: "u", properties: { $unset: ["plan"] } },
            { event: "e", distinct_id: "u", properties: { $set_once: { plan: "free" } } },
          ])
        ).events,
      );
      await storage.close();
      const kinds = await db.rows<{ kind: string; rows: string }>(
        `SELECT kind, toString(count()) AS rows FROM ${facts} WHERE distinct_id IN ('old', 'u') GROUP BY kind ORDER BY kind`,
      );
      expect(kinds).toEqual([
        { kind: "born", rows: "1" },
        { kind: "property", rows: "2" }, // old's, and u's two updates of plan in one batch as one row
        { kind: "once", rows: "1" },
      ]);
    });
  });

  test("a column of another type stops startup with one sentence naming the table", async () => {
    await onFreshDatabase(async (config, db) => {
      await db.command(`ALTER TABLE ${db.table("persons")} MODIFY COLUMN is_deleted UInt16`);
      const opened = Storage.open(storageOptions(config));
      await expect(opened).rejects.toBeInstanceOf(SchemaError);
      await expect(opened).rejects.toThrow(
        `Table \`${config.clickhouse.database}\`.\`persons\` has column is_deleted of type UInt16, but this service writes UInt8`,
      );
    });
  });
});

describe("events.properties_typed", () => {
  test("each key is a typed subcolumn; properties keeps the text as sent; SELECT * leaves it out", async () => {
    const properties = {
      $browser: "Chrome",
      price: 12.5,
      seats: 3,
      beta: true,
      tags: ["a", "b"],
      plan: { tier: "pro" },
    };
    await send(service, { api_key: KEY, batch: [{ event: "typed", distinct_id: "typed-1", properties }] });
    const [row] = await service.db.rows<Record<string, unknown>>(
      `SELECT properties_typed.\`$browser\` AS browser, toTypeName(properties_typed.price) AS dynamic,
              dynamicType(properties_typed.price) AS price_type, properties_typed.price::Float64 + properties_typed.seats::Int64 AS sum,
              properties_typed.beta::Bool AS beta, properties_typed.plan.tier AS tier, properties_typed.missing IS NULL AS missing,
              JSONExtract(properties, 'seats', 'Int64') AS seats
       FROM ${service.db.table("events")} WHERE event = 'typed'`,
    );
    expect(row).toEqual({
      browser: "Chrome",
      dynamic: "Dynamic",
      price_type: "Float64",
      sum: 15.5,
      beta: true,
      tier: "pro",
      missing: 1,
      seats: 3,
    });
    const [star] = await service.db.rows<Record<string, unknown>>(
      `SELECT * FROM ${service.db.table("events")} WHERE event = 'typed'`,
    );
    expect(Object.keys(star!)).not.toContain("properties_typed");
  });

  test("a key with a dot is a path: one named twice keeps the first, and the event is stored as sent", async () => {
    const body =
      '{"api_key":"key-1","batch":[{"event":"dotted","distinct_id":"typed-2","properties":{"a.b":1,"a":{"b":2},"c":3}}]}';
    const answer = await fetch(`${service.url}/batch/`, {
      method: "POST",
      body,
      headers: { "Content-Type": "application/json" },
    });
    expect(answer.status).toBe(200);
    const rows = await service.db.rows<Record<string, unknown>>(
      `SELECT properties, toString(properties_typed) AS typed FROM ${service.db.table("events")} WHERE event = 'dotted'`,
    );
    expect(rows).toEqual([{ properties: '{"a.b":1,"a":{"b":2},"c":3}', typed: '{"a":{"b":1},"c":3}' }]);
  });
});

test("by default (TYPED_PROPERTIES=0) a new database has no properties_typed; events_resolved reads without it", async () => {
  const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: uniqueDatabase() });
  const storage = await Storage.open(storageOptions(config));
  const db = await openDb(config.clickhouse.database);
  try {
    await storage.ingest((await captured([{ event: "plain", distinct_id: "u", properties: { plan: "pro" } }])).events);
    const columns = await db.rows<{ table: string; name: string }>(
      `SELECT table, name FROM system.columns WHERE database = ${literal(config.clickhouse.database)} AND name = 'properties_typed'`,
    );
    expect(columns).toEqual([]);
    expect(await db.rows(`SELECT event FROM ${db.table("events_resolved")}`)).toEqual([{ event: "plain" }]);
  } finally {
    await storage.close();
    await db.command(`DROP DATABASE \`${config.clickhouse.database}\``);
    await db.close();
  }
});

describe("sessions for web analytics", () => {
  const at = (second: number) => `2024-07-02T10:00:${String(second).padStart(2, "0")}Z`;
  const view = (session: string, second: number, path: string, properties: Record<string, unknown> = {}) => ({
    event: "$pageview",
    distinct_id: `visitor-${session}`,
    timestamp: at(second),
    properties: { $session_id: session, $current_url: `https://shop.example${path}`, ...properties },
  });
  const other = (event: string, session: string, second: number, properties: Record<string, unknown> = {}) => ({
    event,
    distinct_id: `visitor-${session}`,
    timestamp: at(second),
    properties: { $session_id: session, ...properties },
  });
  const events = [
    // w-1: a custom event first, then the landing pageview (the entry), a click, a second page
    other("signed_up", "w-1", 0, { utm_source: "not-the-entry", $browser: "Firefox" }),
    view("w-1", 2, "/landing?utm_source=newsletter", {
      $referring_domain: "news.example",
      utm_source: "newsletter",
      utm_medium: "email",
      utm_campaign: "spring",
      gclid: "g-1",
      fbclid: "",
      $browser: "Chrome",
      $os: "Mac OS X",
      $device_type: "Desktop",
      $geoip_country_code: "DE",
    }),
    other("$autocapture", "w-1", 5),
    view("w-1", 20, "/checkout", { $referring_domain: "$direct", utm_source: "later" }),
    // w-2: one pageview, left after 5 s: a bounce; located by the service (an address in Britain)
    view("w-2", 0, "/docs", { $referring_domain: "google.com", $ip: "81.2.69.160" }),
    other("$pageleave", "w-2", 5, { $current_url: "https://shop.example/docs" }),
    // w-3: one pageview, left after 15 s: not a bounce (10 s or more)
    view("w-3", 0, "/blog"),
    other("$pageleave", "w-3", 15),
    // w-4: no pageview or screen: bounce is unknown, and it has no entry event
    other("api_call", "w-4", 1, { utm_source: "first", $lib: "posthog-node" }),
    other("api_call", "w-4", 3, { utm_source: "second" }),
    // w-5: a mobile app's one screen: a bounce
    other("$screen", "w-5", 0, { $os: "iOS", $device_type: "Mobile", $screen_name: "Home" }),
  ];
  // each with its uuid, as SDKs send them, so a resent event is the same event
  const batch = events.map((event, i) => ({
    ...event,
    uuid: `0190b4a1-0000-7000-9000-${String(i).padStart(12, "0")}`,
  }));

  interface WebSession {
    session_id: string;
    entry_url: string;
    exit_url: string;
    entry_pathname: string;
    exit_pathname: string;
    views: number | string;
    autocaptures: number | string;
    duration: number | string;
    is_bounce: number | null;
    entry_of: Record<string, string>;
  }
  const read = () =>
    service.db.rows<WebSession>(
      `SELECT session_id, argMinMerge(entry_url) AS entry_url, argMaxMerge(exit_url) AS exit_url,
         path(entry_url) AS entry_pathname, path(exit_url) AS exit_pathname,
         uniqMerge(pageview_count) + uniqMerge(screen_count) AS views,
         uniqMerge(autocapture_count) AS autocaptures,
         dateDiff('second', min(min_timestamp), max(max_timestamp)) AS duration,
         if(views = 0, NULL, NOT (views > 1 OR autocaptures > 0 OR duration >= 10)) AS is_bounce,
         map(${["referring_domain", "utm_source", "utm_medium", "utm_campaign", "browser", "os", "device_type"]
           .concat(["gclid", "fbclid", "country"])
           .map((name) => `'${name}', argMinMerge(entry_${name})`)
           .join(", ")}) AS entry_of
       FROM ${service.db.table("sessions")} WHERE session_id LIKE 'w-%' GROUP BY session_id ORDER BY session_id`,
    );
  const none = {
    referring_domain: "",
    utm_source: "",
    utm_medium: "",
    utm_campaign: "",
    browser: "",
    os: "",
    device_type: "",
    gclid: "",
    fbclid: "",
    country: "",
  };
  const expected = [
    {
      session_id: "w-1",
      entry_url: "https://shop.example/landing?utm_source=newsletter",
      exit_url: "https://shop.example/checkout",
      entry_pathname: "/landing",
      exit_pathname: "/checkout",
      views: 2,
      autocaptures: 1,
      duration: 20,
      is_bounce: 0,
      entry: {
        ...none,
        referring_domain: "news.example",
        utm_source: "newsletter",
        utm_medium: "email",
        utm_campaign: "spring",
        browser: "Chrome",
        os: "Mac OS X",
        device_type: "Desktop",
        country: "DE",
        gclid: "g-1",
      },
    },
    {
      session_id: "w-2",
      entry_url: "https://shop.example/docs",
      exit_url: "https://shop.example/docs",
      entry_pathname: "/docs",
      exit_pathname: "/docs",
      views: 1,
      autocaptures: 0,
      duration: 5,
      is_bounce: 1,
      entry: { ...none, referring_domain: "google.com", country: "GB" },
    },
    {
      session_id: "w-3",
      entry_url: "https://shop.example/blog",
      exit_url: "https://shop.example/blog",
      entry_pathname: "/blog",
      exit_pathname: "/blog",
      views: 1,
      autocaptures: 0,
      duration: 15,
      is_bounce: 0,
      entry: none,
    },
    {
      session_id: "w-4",
      entry_url: "",
      exit_url: "",
      entry_pathname: "",
      exit_pathname: "",
      views: 0,
      autocaptures: 0,
      duration: 2,
      is_bounce: null,
      entry: none,
    },
    {
      session_id: "w-5",
      entry_url: "",
      exit_url: "",
      entry_pathname: "",
      exit_pathname: "",
      views: 1,
      autocaptures: 0,
      duration: 0,
      is_bounce: 1,
      entry: { ...none, os: "iOS", device_type: "Mobile" },
    },
  ];
  const numbers = (rows: WebSession[]) =>
    rows.map(({ entry_of, ...row }) => ({
      ...row,
      entry: entry_of,
      views: Number(row.views),
      autocaptures: Number(row.autocaptures),
      duration: Number(row.duration),
    }));

  test("each session keeps its entry (its first pageview or screen), counts, and PostHog's bounce", async () => {
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
    expect(numbers(await read())).toEqual(expected);
  });

  test("each entry column holds its own property of the entry event", async () => {
    const properties = Object.values(ENTRY_PROPERTIES);
    const valued = Object.fromEntries(properties.map((property) => [property, `v${property}`]));
    const landing = { ...view("e-all", 1, "/"), uuid: "0190b4a1-0000-7000-9000-0000000000e1" };
    landing.properties = { ...landing.properties, ...valued };
    // later views of the same session, with other values: none of them is the entry
    const later = [2, 3].map((second) => ({
      ...view("e-all", second, "/next", Object.fromEntries(properties.map((property) => [property, `later${second}`]))),
      uuid: `0190b4a1-0000-7000-9000-0000000000e${second}`,
    }));
    expect((await send(service, { api_key: KEY, batch: [later[0], landing] })).status).toBe(200);
    expect((await send(service, { api_key: KEY, batch: [later[1]] })).status).toBe(200);
    const columns = Object.keys(ENTRY_PROPERTIES);
    const [row] = await service.db.rows<Record<string, string>>(
      `SELECT ${columns.map((column) => `argMinMerge(${column}) AS ${column}`).join(", ")}
       FROM ${service.db.table("sessions")} WHERE session_id = 'e-all' GROUP BY session_id`,
    );
    expect(row).toEqual(Object.fromEntries(columns.map((column) => [column, `v${ENTRY_PROPERTIES[column]}`])));
  });

  test("a property the entry view lacks comes from the session's first view that has it, as in PostHog", async () => {
    const views = [
      // a custom event first: not a view, so not the entry, whatever it carries
      { ...other("clicked", "f-1", 0, { utm_source: "custom" }), uuid: "0190b4a1-0000-7000-9000-0000000000f0" },
      { ...view("f-1", 1, "/", { $referring_domain: "a.example" }), uuid: "0190b4a1-0000-7000-9000-0000000000f1" },
      {
        ...view("f-1", 2, "/2", { $referring_domain: "b.example", utm_source: "second", $browser: "" }),
        uuid: "0190b4a1-0000-7000-9000-0000000000f2",
      },
      { ...view("f-1", 3, "/3", { utm_source: "third" }), uuid: "0190b4a1-0000-7000-9000-0000000000f3" },
    ];
    // in reverse, in two requests: the order they arrive in does not matter
    expect((await send(service, { api_key: KEY, batch: views.slice(2).reverse() })).status).toBe(200);
    expect((await send(service, { api_key: KEY, batch: views.slice(0, 2) })).status).toBe(200);
    const [row] = await service.db.rows(
      `SELECT argMinMerge(entry_referring_domain) AS domain, argMinMerge(entry_utm_source) AS source,
         argMinMerge(entry_browser) AS browser, argMinMerge(entry_url) AS url
       FROM ${service.db.table("sessions")} WHERE session_id = 'f-1' GROUP BY session_id`,
    );
    expect(row).toEqual({ domain: "a.example", source: "second", browser: "", url: "https://shop.example/" });
  });

  test("the same events again, in other requests and in reverse, change nothing", async () => {
    for (const again of [[...batch].reverse(), batch.slice(0, 4), batch.slice(4)]) {
      expect((await send(service, { api_key: KEY, batch: again })).status).toBe(200);
    }
    expect(numbers(await read())).toEqual(expected);
  });
});

describe("writes that must not be refused", () => {
  test("a historical batch spanning 150 months is stored whole", async () => {
    const batch = Array.from({ length: 150 }, (_, i) => ({
      event: "historical",
      distinct_id: `h-${i % 7}`,
      uuid: `0190b4a1-0000-7000-8000-${String(i).padStart(12, "0")}`,
      timestamp: new Date(Date.UTC(2000, i, 15)).toISOString(),
      properties: { $session_id: "h-session" },
    }));
    const sent = await send(service, { api_key: KEY, historical_migration: true, batch });
    expect(sent).toMatchObject({ status: 200, body: { ingested: 150 } });
    expect(await count(service.db, "events", "event = 'historical'")).toBe(150);
  });
});

test("an event that arrives again (a lost 200, a retry) counts once in sessions, however often", async () => {
  const batch = Array.from({ length: 10 }, (_, i) => ({
    event: i % 2 ? "$pageview" : "clicked",
    distinct_id: "resender",
    uuid: `0190b4a1-0000-7000-8000-${String(i).padStart(12, "0")}`,
    timestamp: `2024-08-01T10:00:0${i}Z`,
    properties: { $session_id: "resent-session" },
  }));
  for (let attempt = 0; attempt < 4; attempt++) {
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
  }
  await send(service, { api_key: KEY, batch: batch.slice(0, 3) }); // part of it once more, in its own request
  const [session] = await service.db.rows<{ events: string | number; pageviews: string | number }>(
    `SELECT uniqMerge(event_count) AS events, uniqMerge(pageview_count) AS pageviews
     FROM ${service.db.table("sessions")} WHERE session_id = 'resent-session'`,
  );
  expect([Number(session?.events), Number(session?.pageviews)]).toEqual([10, 5]);
  expect(await count(service.db, "events", "session_id = 'resent-session'", { final: true })).toBe(10);
});

test("an event repeated within one request, and in requests written by the same flush, reads once", async () => {
  const event = {
    event: "$pageview",
    distinct_id: "repeater",
    uuid: "0190b4a1-0000-7000-8000-00000000beef",
    timestamp: "2024-08-02T10:00:00Z",
    properties: { $session_id: "repeated-session" },
  };
  expect((await send(service, { api_key: KEY, batch: [event, event, event] })).status).toBe(200);
  // sent together, so the group commit may write them in one insert, where no merge has collapsed them yet
  const together = await Promise.all([1, 2, 3].map(() => send(service, { api_key: KEY, batch: [event, event] })));
  expect(together.map((response) => response.status)).toEqual([200, 200, 200]);
  expect(await count(service.db, "events", "session_id = 'repeated-session'", { final: true })).toBe(1);
  const [session] = await service.db.rows<{ events: string | number }>(
    `SELECT uniqMerge(event_count) AS events FROM ${service.db.table("sessions")}
     WHERE session_id = 'repeated-session'`,
  );
  expect(Number(session?.events)).toBe(1);
});
