import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { loadConfig, MATERIALIZED_BY_DEFAULT, PERSON_MATERIALIZED_BY_DEFAULT } from "../../src/config";
import { ClickHouse } from "../../src/storage/clickhouse";
import { schemaObjects } from "../../src/storage/schema";
import { storageOptions } from "../../src/write";
import { API_KEY, DATABASE, DAY_1, DAY_2, REQUESTS, RETRIED, uuid } from "../fixtures/0.1.0/batches";
import { docStatements } from "../helpers/doc-sql";
import { logEntries, processEnv, type RunningService, startProcess } from "../helpers/process";
import { scratchDir } from "../helpers/scratch";
import { clickhouseEnv, openStorage, uniqueDatabase } from "../helpers/service";

// Issue 42, item 6: a data directory the released 0.1.0 wrote (test/fixtures/0.1.0: what was sent, and how the
// directory was made) is started on by this version, as its own process: it starts, its schema becomes this
// version's, the rows 0.1.0 stored read what CHANGELOG.md's upgrade notes and docs/analytics.md say they read, new
// events get the new columns, and the docs' queries answer. A second start then finds nothing to do.

const FIXTURE = join(import.meta.dir, "..", "fixtures", "0.1.0", "data.tar.gz");
const PASSWORD = "upgrade-test";
/** docs.test.ts's settings, so that docs/analytics.md's queries have what they read; defaults otherwise. */
const SETTINGS = {
  PUBLIC_API_KEYS: API_KEY,
  PERSONS_ON_EVENTS: "1",
  TYPED_PROPERTIES: "1",
  MATERIALIZED_PROPERTIES: [...MATERIALIZED_BY_DEFAULT, "plan", "seats"].join(","),
};
const MATERIALIZED = SETTINGS.MATERIALIZED_PROPERTIES.split(",");
/** A day after the fixture's, for what is sent after the upgrade and for the docs' "last 7 days". */
const DAY_3 = "2026-11-22";

type Row = Record<string, unknown>;

/** 64-bit counts come quoted in JSON: compared as numbers. */
const numbers = (row: Row) =>
  Object.fromEntries(
    Object.entries(row).map(([k, v]) => [k, typeof v === "string" && /^\d+$/.test(v) ? Number(v) : v]),
  );

/** The events of 0.1.0's fixture by uuid, as sent. */
const SENT = new Map(REQUESTS.flat().map((event) => [event.uuid, event]));

describe.skipIf(Boolean(process.env.CLICKHOUSE_URL))("a data directory written by 0.1.0", () => {
  const dataDir = scratchDir("ingest-upgrade-");
  const env = processEnv({
    DATA_DIR: dataDir,
    CLICKHOUSE_DATABASE: DATABASE,
    QUERY_PORT: "0",
    QUERY_PASSWORD: PASSWORD,
    ...SETTINGS,
  });
  let service: RunningService;
  const running: RunningService[] = [];

  /** The rows of `statement`, read through the running service's query port. */
  async function sql(statement: string): Promise<Row[]> {
    const response = await fetch(`${service.started.query}?default_format=JSONEachRow`, {
      method: "POST",
      body: statement,
      headers: { authorization: `Basic ${btoa(`default:${PASSWORD}`)}` },
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${response.status} for ${statement}: ${text}`);
    return text
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => numbers(JSON.parse(line) as Row));
  }

  async function sendBatch(batch: unknown[]): Promise<void> {
    const response = await fetch(`${service.url}/batch/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ api_key: API_KEY, batch }),
    });
    expect(response.status).toBe(200);
  }

  async function start(extra: Record<string, string> = {}): Promise<RunningService> {
    service = await startProcess({ ...env, ...extra });
    running.push(service);
    return service;
  }

  async function stop(): Promise<void> {
    service.child.kill("SIGTERM");
    expect(await service.child.exited).toBe(0);
  }

  /** The service's log lines up to and including `started`: what it did at startup. */
  const startup = (s: RunningService) => {
    const entries = logEntries(s.output());
    return entries.slice(0, entries.findIndex((entry) => entry.msg === "started") + 1);
  };

  /** Each table's and view's engine, keys and columns (with their expressions), the database's name left out. */
  const schemaQuery = (database: string) =>
    `SELECT t.name AS object, t.engine AS engine, replaceAll(t.engine_full, '${database}', 'DB') AS engine_full,
            groupArray((c.name, c.type, c.default_kind, c.default_expression)) AS columns
     FROM system.tables AS t JOIN system.columns AS c ON c.database = t.database AND c.table = t.name
     WHERE t.database = '${database}' GROUP BY object, engine, engine_full ORDER BY object`;
  const sortedColumns = (rows: Row[]): Row[] =>
    rows.map((row) => ({ ...row, columns: (row.columns as unknown[][]).map((c) => c.join(" ")).sort() }));

  /** The person each of 0.1.0's distinct IDs was stored with, by the ID. */
  let personOf: Record<string, string>;

  beforeAll(async () => {
    const unpack = Bun.spawnSync(["tar", "-xzf", FIXTURE, "-C", dataDir]);
    expect(unpack.exitCode).toBe(0);
    await start();
    const rows = await sql("SELECT DISTINCT distinct_id, toString(person_id) AS person FROM events");
    personOf = Object.fromEntries(rows.map((row) => [row.distinct_id, row.person]));
  }, 30_000);
  afterAll(async () => {
    for (const s of running) if (s.child.exitCode === null) s.child.kill("SIGTERM");
    await Promise.all(running.map((s) => s.child.exited));
  });

  test("the first start upgrades it in place: the new columns added to events, sessions made again from events", () => {
    const entries = startup(service);
    expect(entries.filter((entry) => entry.level === "error")).toEqual([]);
    const repaired = entries.filter((entry) => String(entry.msg).startsWith("schema repaired"));
    expect(repaired.map((entry) => `${entry.table}.${entry.column}`).sort()).toEqual(
      [
        "ip",
        "geoip",
        "person_properties",
        "person_created_at",
        "properties_typed",
        ...MATERIALIZED.map((key) => `mat_${key}`),
        ...PERSON_MATERIALIZED_BY_DEFAULT.map((key) => `pmat_${key}`),
      ]
        .map((column) => `\`${DATABASE}\`.\`events\`.${column}`)
        .sort(),
    );
    const rebuild = entries.filter((entry) => String(entry.msg).startsWith("schema upgrade: "));
    expect(rebuild.map(({ msg, table }) => ({ msg, table }))).toEqual([
      { msg: "schema upgrade: rebuilding a table from events", table: `\`${DATABASE}\`.\`sessions\`` },
      { msg: "schema upgrade: table rebuilt", table: `\`${DATABASE}\`.\`sessions\`` },
    ]);
    expect(String(rebuild[0]!.reason)).toContain("uniqExact");
    expect(entries.at(-1)).toMatchObject({ msg: "started", version: expect.any(String) });
  });

  test("its tables and views are a new database's: the same engines, keys (events keeps its months), columns and types", async () => {
    // a new database as the service makes it at startup (the schema, then the engine's table settings)
    const config = loadConfig({ ...clickhouseEnv(), ...SETTINGS, CLICKHOUSE_DATABASE: uniqueDatabase() });
    await (await openStorage(config)).close();
    const db = await ClickHouse.connect(config.clickhouse);
    try {
      const fresh = sortedColumns(await db.rows<Row>(schemaQuery(db.database)));
      const upgraded = sortedColumns(await sql(schemaQuery(DATABASE)));
      expect(upgraded.map((row) => row.object)).toEqual([
        "events",
        "events_resolved",
        "group_facts",
        "groups",
        "identity_facts",
        "person_distinct_ids",
        "person_overrides",
        "person_squashes",
        "persons",
        "sessions",
        "sessions_mv",
      ]);
      // the service rewrites no table: events stays partitioned by month, where a new one is by day
      const events = (rows: Row[]) => String(rows.find((row) => row.object === "events")?.engine_full);
      expect(events(upgraded)).toContain("PARTITION BY toYYYYMM(timestamp) ORDER BY");
      const byDayKey = /PARTITION BY (.+) ORDER BY/.exec(events(fresh))?.[1] ?? "";
      expect(byDayKey).toMatch(/^if\(.*2020.*2059.*toYYYYMMDD\(timestamp\), toYYYYMM\(timestamp\)\)$/);
      const asNew = events(upgraded).replace("toYYYYMM(timestamp)", byDayKey);
      const byDay = upgraded.map((row) => (row.object === "events" ? { ...row, engine_full: asNew } : row));
      expect(byDay).toEqual(fresh);
      await db.command(`DROP DATABASE \`${db.database}\``);
    } finally {
      await db.close();
    }
    // the views are this version's statements (their comments are digests of them), the table set aside gone
    const views = await sql(
      `SELECT name, comment FROM system.tables WHERE database = '${DATABASE}' AND engine IN ('View', 'MaterializedView')`,
    );
    const definitions = schemaObjects(DATABASE, undefined, storageOptions(loadConfig(env)).schema)
      .filter((object) => object.replace)
      .map((object) => ({ name: object.name, comment: object.definition }));
    const byName = (a: Row, b: Row) => String(a.name).localeCompare(String(b.name));
    expect(views.sort(byName)).toEqual(definitions.sort(byName));
  });

  test("0.1.0's events read their property columns from their properties, and empty person and location columns", async () => {
    const columns = MATERIALIZED.map((key) => `\`mat_${key}\``).join(", ");
    const rows = await sql(
      `SELECT toString(uuid) AS uuid, ${columns}, properties, properties_typed.\`$browser\`.:String AS typed_browser,
              person_properties, toString(person_created_at) AS person_created_at, ip, geoip
       FROM events FINAL ORDER BY uuid`,
    );
    expect(rows.map((row) => row.uuid)).toEqual([...SENT.keys()].sort());
    for (const row of rows) {
      const properties = SENT.get(String(row.uuid))!.properties;
      // as docs/analytics.md says: a string as sent, '' where the event lacks it
      const expected = Object.fromEntries(MATERIALIZED.map((key) => [`mat_${key}`, properties[key] ?? ""]));
      expect({ uuid: row.uuid, ...Object.fromEntries(Object.keys(expected).map((key) => [key, row[key]])) }).toEqual({
        uuid: row.uuid,
        ...expected,
      });
      expect(row.typed_browser).toBe((properties.$browser as string | undefined) ?? null);
      // CHANGELOG.md: person columns "older rows read '' and 1970"; ip and geoip "empty in older rows"
      expect([row.person_properties, row.person_created_at, row.ip, row.geoip]).toEqual([
        "",
        "1970-01-01 00:00:00.000000",
        "",
        "",
      ]);
    }
    // a few values written out, so that the check above cannot pass on empty columns
    const first = rows.find((row) => row.uuid === uuid(1))!;
    expect(first).toMatchObject({
      mat_$browser: "Chrome",
      mat_$pathname: "/",
      mat_$referring_domain: "news.example",
      mat_utm_source: "newsletter",
      mat_utm_campaign: "spring",
      mat_$lib: "web",
      typed_browser: "Chrome",
    });
    expect(rows.find((row) => row.uuid === uuid(5))).toMatchObject({ mat_$lib: "posthog-node", mat_$browser: "" });
  });

  test("sessions are made again from 0.1.0's events: the new counts and every entry column, a retry counted once", async () => {
    const rows = await sql(
      `SELECT session_id, argMinMerge(distinct_id) AS first, uniqMerge(event_count) AS events,
              uniqMerge(pageview_count) AS pageviews, uniqMerge(autocapture_count) AS autocaptures,
              uniqMerge(screen_count) AS screens, argMinMerge(entry_url) AS entry, argMaxMerge(exit_url) AS exit,
              argMinMerge(entry_referring_domain) AS referrer, argMinMerge(entry_utm_source) AS source,
              argMinMerge(entry_utm_campaign) AS campaign, argMinMerge(entry_browser) AS browser,
              argMinMerge(entry_os) AS os, argMinMerge(entry_device_type) AS device, argMinMerge(entry_country) AS country,
              toString(min(min_timestamp)) AS start, toString(max(max_timestamp)) AS end
       FROM sessions GROUP BY session_id ORDER BY session_id`,
    );
    const url = (path: string) => `https://shop.example${path}`;
    const session = (
      id: string,
      first: string,
      [events, pageviews, autocaptures]: number[],
      [entry, exit]: string[],
      [referrer, source, campaign]: string[],
      [browser, os, device]: string[],
      [start, end]: string[],
    ) => ({
      session_id: id,
      first,
      events,
      pageviews,
      autocaptures,
      screens: 0,
      entry: url(entry!),
      exit: url(exit!),
      referrer,
      source,
      campaign,
      browser,
      os,
      device,
      country: "",
      start: `${start}000`,
      end: `${end}000`,
    });
    const chrome = ["Chrome", "Mac OS X", "Desktop"];
    const firefox = ["Firefox", "Windows", "Desktop"];
    expect(rows).toEqual([
      session("s-a1", "anon-a", [4, 2, 1], ["/", "/pricing"], ["news.example", "newsletter", "spring"], chrome, [
        `${DAY_1} 09:00:00.000`,
        `${DAY_1} 09:01:00.000`,
      ]),
      session("s-a2", "user-a", [3, 2, 0], ["/account", "/checkout"], ["", "", ""], chrome, [
        `${DAY_2} 12:00:00.000`,
        `${DAY_2} 12:01:00.000`,
      ]),
      session("s-b1", "anon-b", [1, 1, 0], ["/", "/"], ["www.google.com", "google", ""], firefox, [
        `${DAY_1} 11:00:00.000`,
        `${DAY_1} 11:00:00.000`,
      ]),
      session("s-b2", "anon-b", [3, 2, 0], ["/", "/login"], ["www.google.com", "", ""], firefox, [
        `${DAY_2} 08:00:00.000`,
        `${DAY_2} 08:00:30.000`,
      ]),
      session(
        "s-c1",
        "anon-c",
        [1, 1, 0],
        ["/blog", "/blog"],
        ["", "", ""],
        ["Mobile Safari", "iOS", "Mobile"],
        [`${DAY_2} 13:00:00.000`, `${DAY_2} 13:00:00.000`],
      ),
    ]);
    expect(await sql("SELECT name FROM system.tables WHERE name = 'sessions_before_rebuild'")).toEqual([]);
  });

  test("events_resolved reads each of 0.1.0's events once, on the person 0.1.0's merge left its distinct ID with", async () => {
    // 0.1.0 stored anon-b's events with anon-b's person, then merged that person into user-b's
    expect(personOf["anon-b"]).not.toBe(personOf["user-b"]);
    expect(personOf["anon-a"]).toBe(personOf["user-a"]);
    // CHANGELOG.md: person_overrides "filled once from the persons and links already stored"
    expect(
      await sql(
        "SELECT toString(old_person_id) AS old, toString(override_person_id) AS new FROM person_overrides FINAL WHERE old != new",
      ),
    ).toEqual([{ old: personOf["anon-b"], new: personOf["user-b"] }]);
    const rows = await sql(
      "SELECT toString(uuid) AS uuid, distinct_id, toString(person_id) AS person FROM events_resolved ORDER BY uuid",
    );
    expect(rows.map((row) => row.uuid)).toEqual([...SENT.keys()].sort()); // the retried event once
    expect(rows.filter((row) => row.uuid === RETRIED)).toHaveLength(1);
    const survivor = { "anon-b": "user-b" } as Record<string, string>;
    for (const row of rows) {
      const id = String(row.distinct_id);
      expect({ id, person: row.person }).toEqual({ id, person: personOf[survivor[id] ?? id] });
    }
  });

  test("the README's queries run on it and find what 0.1.0 stored", async () => {
    const [events, daily, persons, sessions, ...rest] = docStatements("README.md");
    expect(rest).toEqual([]);
    expect(await sql(events!)).toEqual(
      expect.arrayContaining([
        { browser: "Chrome", "count()": 4 },
        { browser: "Firefox", "count()": 3 },
        { browser: "Mobile Safari", "count()": 1 },
      ]),
    );
    expect((await sql(events!)).length).toBe(3);
    // day 1: anon-a/user-a, user-b and anon-b (merged since); day 2: the same two, anon-c and user-d
    expect((await sql(`${daily!} ORDER BY day`)).map((row) => [row.day, row.persons])).toEqual([
      [DAY_1, 2],
      [DAY_2, 4],
    ]);
    const people = await sql(persons!);
    expect(people.map((person) => (person.ids as string[]).sort()).sort()).toEqual([
      ["anon-a", "user-a"],
      ["anon-b", "user-b"],
      ["anon-c"],
      ["user-d"],
    ]);
    expect(people.map((person) => JSON.parse(String(person.properties)))).toContainEqual({
      email: "a@example.com",
      first_plan: "pro",
      plan: "enterprise",
    });
    // news.example: s-a1, two views; www.google.com: s-b1 (a bounce) and s-b2; none: s-a2 and s-c1 (a bounce)
    expect(await sql(sessions!)).toEqual(
      expect.arrayContaining([
        { source: "news.example", sessions: 1, views: 2, bounce_rate: 0 },
        { source: "www.google.com", sessions: 2, views: 3, bounce_rate: 0.5 },
        { source: "", sessions: 2, views: 3, bounce_rate: 0.5 },
      ]),
    );
  });

  test("docs/analytics.md's queries run on it", async () => {
    // its "last 7 days" read as of the day after 0.1.0's events
    const asOf = `toDateTime64('${DAY_3} 00:00:00', 6, 'UTC')`;
    const statements = docStatements("docs/analytics.md").map((statement) => statement.replaceAll("now()", asOf));
    const [columnBrowsers, columnSeats, browsers, seats, tier, daily, plans, personOs, overview, entries, ...rest] =
      statements;
    expect(rest).toEqual([]);
    const pageviews = [
      { browser: "Chrome", "count()": 4 },
      { browser: "Firefox", "count()": 3 },
      { browser: "Mobile Safari", "count()": 1 },
    ];
    expect(await sql(columnBrowsers!)).toEqual(pageviews);
    expect(await sql(browsers!)).toEqual(pageviews);
    // 0.1.0 stored no clicked_plan or checkout
    expect(await sql(columnSeats!)).toEqual([]);
    expect(await sql(tier!)).toEqual([]);
    expect((await sql(seats!)).map((row) => Object.values(row))).toEqual([[null]]);
    expect((await sql(`${daily!}`)).map((row) => [row.day, row.persons])).toEqual([
      [DAY_1, 2],
      [DAY_2, 4],
    ]);
    // its events were stored without their persons' properties
    expect(await sql(plans!)).toEqual([{ plan: "", events: SENT.size }]);
    expect(await sql(personOs!)).toEqual([{ os: "", n: 8 }]);
    expect(await sql(overview!)).toEqual(
      expect.arrayContaining([
        { source: "www.google.com", sessions: 2, visitors: 1, views: 3, bounce_rate: 0.5, duration_s: 15 },
        { source: "news.example", sessions: 1, visitors: 1, views: 2, bounce_rate: 0, duration_s: 60 },
      ]),
    );
    expect(await sql(entries!)).toEqual(
      expect.arrayContaining([
        { entry_pathname: "/", campaign: "", sessions: 2 },
        { entry_pathname: "/", campaign: "spring", sessions: 1 },
      ]),
    );
  });

  test("events sent after the upgrade get the new columns, their person from 0.1.0's, and merge 0.1.0's persons", async () => {
    const at = (time: string) => `${DAY_3}T${time}Z`;
    const browser = { $browser: "Chrome", $os: "Mac OS X", $device_type: "Desktop", $lib: "web" };
    await sendBatch([
      {
        uuid: uuid(101),
        event: "$pageview",
        distinct_id: "user-a",
        timestamp: at("09:00:00.000"),
        properties: {
          ...browser,
          $session_id: "s-a3",
          $current_url: "https://shop.example/pricing",
          $pathname: "/pricing",
          $referring_domain: "ads.example",
          utm_source: "ads",
          $set: { seats: 3 },
        },
      },
      {
        uuid: uuid(102),
        event: "$pageview",
        distinct_id: "anon-b",
        timestamp: at("10:00:00.000"),
        properties: { $browser: "Firefox", $session_id: "s-b3", $current_url: "https://shop.example/" },
      },
      {
        uuid: uuid(104),
        event: "settings_saved",
        distinct_id: "user-d",
        timestamp: at("10:30:00.000"),
        properties: { $lib: "posthog-node", $set: { seats: 5 } },
      },
    ]);
    // anon-c's person (0.1.0's) into user-a's, the older
    await sendBatch([
      {
        uuid: uuid(103),
        event: "$identify",
        distinct_id: "user-a",
        timestamp: at("11:00:00.000"),
        properties: { $anon_distinct_id: "anon-c" },
      },
    ]);
    const rows = await sql(
      `SELECT toString(uuid) AS uuid, toString(person_id) AS person, \`mat_$browser\` AS browser,
              \`mat_$pathname\` AS pathname, mat_utm_source AS source, person_properties,
              toString(person_created_at) AS person_created_at
       FROM events WHERE uuid IN ('${uuid(101)}', '${uuid(102)}', '${uuid(104)}') ORDER BY uuid`,
    );
    expect(rows.map(({ person_properties, ...row }) => row)).toEqual([
      {
        uuid: uuid(101),
        person: personOf["user-a"],
        browser: "Chrome",
        pathname: "/pricing",
        source: "ads",
        person_created_at: `${DAY_1} 09:00:00.000000`,
      },
      {
        uuid: uuid(102),
        person: personOf["user-b"],
        browser: "Firefox",
        pathname: "",
        source: "",
        person_created_at: `${DAY_1} 10:00:00.000000`,
      },
      {
        uuid: uuid(104),
        person: personOf["user-d"],
        browser: "",
        pathname: "",
        source: "",
        person_created_at: `${DAY_2} 15:00:00.000000`,
      },
    ]);
    // the person 0.1.0 stored, with this event's $set: its properties are carried over into facts
    expect(JSON.parse(String(rows[0]!.person_properties))).toMatchObject({
      email: "a@example.com",
      first_plan: "pro",
      plan: "enterprise",
      seats: 3,
    });
    expect(JSON.parse(String(rows[1]!.person_properties))).toMatchObject({
      email: "b@example.com",
      first_plan: "free",
      plan: "free",
    });
    // a person of one distinct ID too (without facts, taken for a new person: its properties were lost)
    expect(JSON.parse(String(rows[2]!.person_properties))).toEqual({ email: "d@example.com", plan: "team", seats: 5 });
    expect(
      await sql(
        "SELECT argMinMerge(entry_referring_domain) AS referrer, argMinMerge(entry_utm_source) AS source FROM sessions WHERE session_id = 's-a3'",
      ),
    ).toEqual([{ referrer: "ads.example", source: "ads" }]);
    // 0.1.0's person of user-a survives the merge; anon-c's event of day 2 reads it now
    const links = await sql(
      "SELECT distinct_id, toString(person_id) AS person FROM person_distinct_ids FINAL WHERE NOT is_deleted ORDER BY distinct_id",
    );
    expect(links).toEqual([
      { distinct_id: "anon-a", person: personOf["user-a"] },
      { distinct_id: "anon-b", person: personOf["user-b"] },
      { distinct_id: "anon-c", person: personOf["user-a"] },
      { distinct_id: "user-a", person: personOf["user-a"] },
      { distinct_id: "user-b", person: personOf["user-b"] },
      { distinct_id: "user-d", person: personOf["user-d"] },
    ]);
    expect(await sql(`SELECT toString(person_id) AS person FROM events_resolved WHERE uuid = '${uuid(11)}'`)).toEqual([
      { person: personOf["user-a"] },
    ]);
    expect(
      await sql(
        "SELECT toString(id) AS id, is_deleted, JSONExtractString(properties, 'email') AS email FROM persons FINAL ORDER BY id",
      ),
    ).toEqual(
      [
        { id: personOf["anon-b"], is_deleted: 1, email: "" },
        { id: personOf["anon-c"], is_deleted: 1, email: "" },
        { id: personOf["user-a"], is_deleted: 0, email: "a@example.com" },
        { id: personOf["user-b"], is_deleted: 0, email: "b@example.com" },
        { id: personOf["user-d"], is_deleted: 0, email: "d@example.com" },
      ].sort((a, b) => a.id!.localeCompare(b.id!)),
    );
  });

  test("a second start finds nothing to upgrade or repair, and changes no row", async () => {
    const state = async () => ({
      schema: sortedColumns(await sql(schemaQuery(DATABASE))),
      views: await sql(`SELECT name, comment FROM system.tables WHERE database = '${DATABASE}' ORDER BY name`),
      persons: await sql("SELECT * FROM persons FINAL ORDER BY id"),
      links: await sql("SELECT * FROM person_distinct_ids FINAL ORDER BY distinct_id"),
      overrides: await sql("SELECT * FROM person_overrides FINAL ORDER BY old_person_id"),
      facts: await sql("SELECT count() AS facts FROM identity_facts"),
      events: await sql(
        "SELECT toString(uuid) AS uuid, toString(person_id) AS person FROM events_resolved ORDER BY uuid",
      ),
      sessions: await sql(
        "SELECT session_id, uniqMerge(event_count) AS n, argMinMerge(entry_utm_source) AS source FROM sessions GROUP BY session_id ORDER BY session_id",
      ),
    });
    const before = await state();
    expect(before.facts).not.toEqual([{ facts: 0 }]); // what was sent after the upgrade wrote facts to check
    await stop();
    const second = await start();
    const entries = startup(second);
    expect(
      entries.filter(
        (entry) =>
          entry.level === "error" || /^(schema repaired|schema upgrade|identity repaired)/.test(String(entry.msg)),
      ),
    ).toEqual([]);
    expect(await state()).toEqual(before);
    await stop();
    expect(logEntries(second.output()).filter((entry) => entry.level === "error" || entry.level === "warn")).toEqual(
      [],
    );
  }, 30_000);

  test("the first squash moves the events of 0.1.0's merge to the person they went to; events_resolved reads as before", async () => {
    const resolved = "SELECT toString(uuid) AS uuid, toString(person_id) AS person FROM events_resolved ORDER BY uuid";
    const stored = "SELECT toString(uuid) AS uuid, toString(person_id) AS person FROM events FINAL ORDER BY uuid";
    const squashed = await start({ SQUASH_INTERVAL_S: "1", SQUASH_GRACE_S: "0" });
    const before = await sql(resolved);
    expect(await sql(stored)).not.toEqual(before); // anon-b's events, on the person merged away
    const deadline = Date.now() + 20_000;
    while (!squashed.output().includes("merges squashed") && Date.now() < deadline) await Bun.sleep(100);
    expect(await sql(stored)).toEqual(before);
    expect(await sql(resolved)).toEqual(before);
    expect(await sql(`SELECT DISTINCT toString(person_id) AS person FROM events WHERE distinct_id = 'anon-b'`)).toEqual(
      [{ person: personOf["user-b"] }],
    );
    await stop();
  }, 30_000);
});
