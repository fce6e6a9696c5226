import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { loadConfig } from "../../src/config";
import { personIdFor } from "../../src/identity";
import type { ClickHouse } from "../../src/storage/clickhouse";
import { schemaObjects } from "../../src/storage/schema";
import { literal } from "../../src/storage/sql";
import { Storage, storageOptions } from "../../src/write";
import { count, links } from "../helpers/rows";
import { clickhouseEnv, openDb, send, startService, type TestService, uniqueDatabase } from "../helpers/service";

// The view analysts count persons on (src/storage/schema/tables.ts, docs/identity.md#events-and-merges): events
// read once however often they were sent, each on the person it has now, its location among its properties.

const KEY = "key-resolved";
const embedded = !process.env.CLICKHOUSE_URL;
const batch = (...events: object[]) => ({ api_key: KEY, batch: events });

let service: TestService;
beforeAll(async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY });
});
afterAll(() => service.stop());

/** Each of `distinctIds`' events as `events_resolved` reads them: name, person, properties; in the order sent. */
async function resolved(db: ClickHouse, distinctIds: readonly string[]) {
  return db.rows<{ event: string; person_id: string; properties: string }>(
    `SELECT event, toString(person_id) AS person_id, properties FROM ${db.table("events_resolved")}
     WHERE distinct_id IN (${distinctIds.map(literal).join(", ")}) ORDER BY timestamp, uuid`,
  );
}

async function sent(...events: object[]): Promise<void> {
  expect((await send(service, batch(...events))).status).toBe(200);
}

describe("events_resolved", () => {
  test("a retried event is read once, its newest copy, in unmerged parts, in one insert, and after merges", async () => {
    const { db } = service;
    // embedded, the parts stay as the inserts made them until the test merges them (a server merges when it will)
    if (embedded) await db.command(`SYSTEM STOP MERGES ${db.table("events")}`);
    const retried = {
      uuid: crypto.randomUUID(),
      event: "retried",
      distinct_id: "r-1",
      timestamp: "2026-02-01T10:00:00Z",
    };
    await sent({ ...retried, properties: { copy: 1 } });
    await sent({ ...retried, properties: { copy: 2 } }); // the SDK sent it again: another flush, another part
    const twice = { uuid: crypto.randomUUID(), event: "twice", distinct_id: "r-1", timestamp: "2026-02-01T10:00:01Z" };
    await sent(twice, twice); // both copies in one insert: one part, not yet merged
    const stored = () => count(db, "events", "distinct_id = 'r-1'");
    if (embedded) expect(await stored()).toBe(4);
    const expected = [
      { event: "retried", person_id: personIdFor("r-1"), properties: '{"copy":2}' },
      { event: "twice", person_id: personIdFor("r-1"), properties: "{}" },
    ];
    expect(await resolved(db, ["r-1"])).toEqual(expected);
    const [persons] = await db.rows<{ n: string | number }>(
      `SELECT uniq(person_id) AS n FROM ${db.table("events_resolved")} WHERE distinct_id = 'r-1'`,
    );
    expect(Number(persons!.n)).toBe(1);
    if (embedded) await db.command(`SYSTEM START MERGES ${db.table("events")}`);
    await db.command(`OPTIMIZE TABLE ${db.table("events")} FINAL`);
    expect(await stored()).toBe(2);
    expect(await resolved(db, ["r-1"])).toEqual(expected);
  });

  test("a merged person's events are read under the survivor, through an override that changes twice", async () => {
    // three persons, each born to its ID's first event; a merge keeps the one created first (earliest timestamp)
    await sent({ event: "first a", distinct_id: "m-a", timestamp: "2026-02-03T00:00:00Z" });
    await sent({ event: "first b", distinct_id: "m-b", timestamp: "2026-02-02T00:00:00Z" });
    await sent({ event: "$create_alias", distinct_id: "m-b", properties: { alias: "m-a" } });
    const [a, b, c] = [personIdFor("m-a"), personIdFor("m-b"), personIdFor("m-c")];
    expect((await links(service.db)).get("m-a")?.person_id).toBe(b);
    expect((await resolved(service.db, ["m-a", "m-b"])).map((row) => row.person_id)).toEqual([b, b, b]);
    // an older history arrives and joins them: the survivor changes, and so does the override of the first
    await sent({ event: "first c", distinct_id: "m-c", timestamp: "2026-02-01T00:00:00Z" });
    await sent({ event: "$create_alias", distinct_id: "m-c", properties: { alias: "m-b" } });
    const rows = await resolved(service.db, ["m-a", "m-b", "m-c"]);
    expect(rows.map((row) => [row.event, row.person_id])).toEqual([
      ["first c", c],
      ["first b", c],
      ["first a", c],
      ["$create_alias", c],
      ["$create_alias", c],
    ]);
    // the events themselves keep the persons they were stored with
    expect(await count(service.db, "events", `event = 'first a' AND person_id = ${literal(a)}`)).toBe(1);
  });

  test("the newest override of a person decides, also when it points back at the person itself", async () => {
    const { db } = service;
    await sent({ event: "mine", distinct_id: "o-x" });
    const [x, y, z] = [personIdFor("o-x"), personIdFor("o-y"), personIdFor("o-z")];
    const override = (to: string, version: number) =>
      db.insert("person_overrides", [{ old_person_id: x, override_person_id: to, version }]);
    const personOfMine = async () => (await resolved(db, ["o-x"]))[0]?.person_id;
    await override(y, 1);
    expect(await personOfMine()).toBe(y);
    await override(z, 2);
    expect(await personOfMine()).toBe(z);
    // a person merged away by a derivation that had not seen its earliest birth turns out to be the survivor
    await override(x, 3);
    expect(await personOfMine()).toBe(x);
    await override(y, 0); // older than the newest: changes nothing
    expect(await personOfMine()).toBe(x);
  });

  test("geoip's members join properties as PostHog stores them; text that is no object, or no location, is left as it is", async () => {
    const { db } = service;
    const geoip = '{"$geoip_country_code":"DE","$geoip_city_name":"Köln"}';
    const cases: [properties: string, geoip: string, expected: string][] = [
      ['{"plan":"pro"}', geoip, '{"plan":"pro","$geoip_country_code":"DE","$geoip_city_name":"Köln"}'],
      ["{}", geoip, '{"$geoip_country_code":"DE","$geoip_city_name":"Köln"}'],
      ['{"name":"Zoë","a":{"b":[1,{"c":"}"}]}}', geoip, `{"name":"Zoë","a":{"b":[1,{"c":"}"}]},${geoip.slice(1)}`],
      ['{"plan":"pro"}', "", '{"plan":"pro"}'],
      ["{}", "", "{}"],
      ["not json", geoip, "not json"], // only a writable query port could store such text
      ["", geoip, ""],
    ];
    // literals: a server's VALUES, as a writable port would insert them
    const values = cases.map(
      ([properties, location], i) =>
        `(${literal(`0190b4a1-0000-7000-8000-00000000c${String(i).padStart(3, "0")}`)}, 'located', ${literal(properties)},
          '2026-02-05 00:00:00', 'g-1', ${literal(personIdFor("g-1"))}, ${literal(location)}, '2026-02-05 00:00:00')`,
    );
    await db.command(
      `INSERT INTO ${db.table("events")} (uuid, event, properties, timestamp, distinct_id, person_id, geoip, created_at)
       VALUES ${values.join(", ")}`,
    );
    const rows = await db.rows<{ properties: string; geoip: string }>(
      `SELECT properties, geoip FROM ${db.table("events_resolved")} WHERE distinct_id = 'g-1' ORDER BY uuid`,
    );
    expect(rows).toEqual(cases.map(([, location, expected]) => ({ properties: expected, geoip: location })));
    for (const { properties } of rows.slice(0, 3)) expect(JSON.parse(properties).$geoip_country_code).toBe("DE");
  });
});

describe("the view made by another version", () => {
  /** The view as schema version 4 made it: the same columns (the property columns' too), another definition, no comment. */
  const previous = (
    db: ClickHouse,
    columns: readonly string[],
  ) => `CREATE OR REPLACE VIEW ${db.table("events_resolved")} AS SELECT
      e.uuid AS uuid, e.event AS event,
      if(e.geoip = '' OR NOT endsWith(e.properties, '}'), e.properties,
        concat(substring(e.properties, 1, length(e.properties) - 1), if(e.properties = '{}', '', ','), substring(e.geoip, 2))) AS properties,
      e.timestamp AS timestamp, e.distinct_id AS distinct_id,
      if(o.old_person_id = e.person_id, o.override_person_id, e.person_id) AS person_id,
      e.session_id AS session_id, e.window_id AS window_id, e.current_url AS current_url, e.host AS host,
      e.ip AS ip, e.geoip AS geoip, e.created_at AS created_at,
      e.person_properties AS person_properties, e.person_created_at AS person_created_at${columns.map((c) => `, e.\`${c}\` AS \`${c}\``).join("")}
    FROM ${db.table("events")} AS e FINAL
    LEFT JOIN (
      SELECT old_person_id, argMax(override_person_id, version) AS override_person_id
      FROM ${db.table("person_overrides")} GROUP BY old_person_id
    ) AS o ON o.old_person_id = e.person_id
    SETTINGS join_use_nulls = 0`;

  test("is made again at startup with this version's definition, though its columns are the same", async () => {
    const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: uniqueDatabase() });
    await (await Storage.open(storageOptions(config))).close();
    const db = await openDb(config.clickhouse.database);
    const warned = spyOn(console, "warn").mockImplementation(() => {});
    const view = async () => {
      const [row] = await db.rows<{ comment: string; as_select: string }>(
        `SELECT comment, as_select FROM system.tables
         WHERE database = ${literal(config.clickhouse.database)} AND name = 'events_resolved'`,
      );
      return row!;
    };
    try {
      const wanted = schemaObjects(config.clickhouse.database, undefined, storageOptions(config).schema).find(
        (object) => object.name === "events_resolved",
      )!;
      expect((await view()).comment).toBe(wanted.definition!);
      const { materializedProperties = [], materializedPersonProperties = [] } = storageOptions(config).schema;
      await db.command(
        previous(db, [
          ...materializedProperties.map((key) => `mat_${key}`),
          ...materializedPersonProperties.map((key) => `pmat_${key}`),
        ]),
      );
      expect(await view()).toMatchObject({ comment: "", as_select: expect.stringContaining("concat(") });
      const storage = await Storage.open(storageOptions(config));
      const opened = await view();
      expect(opened.comment).toBe(wanted.definition!);
      expect(opened.as_select).toContain("overlay(");
      const said = warned.mock.calls.map((call) => String(call[0]));
      expect(said).toEqual([
        `Schema: ${db.table("events_resolved")} was made by another version; made again with this version's definition.`,
      ]);
      // and as this version's, it is left alone at the next start
      await storage.close();
      await (await Storage.open(storageOptions(config))).close();
      expect(warned.mock.calls.length).toBe(1);
    } finally {
      warned.mockRestore();
      await db.command(`DROP DATABASE \`${config.clickhouse.database}\``);
      await db.close();
    }
  });
});
