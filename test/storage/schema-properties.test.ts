import { afterAll, beforeAll, expect, spyOn, test } from "bun:test";
import { MATERIALIZED_BY_DEFAULT } from "../../src/config";
import { columnsNamed, ingestInto, onDatabase, tuplesNamed } from "../helpers/columns";
import { send, startService, type TestService, uniqueDatabase } from "../helpers/service";

const KEY = "key-1";
let service: TestService;

beforeAll(async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, MATERIALIZED_PROPERTIES: "$browser,plan,seats,beta,tags,gone" });
});
afterAll(() => service.stop());

test("each key listed is a column of its value as text; SELECT * leaves them out; events_resolved has them", async () => {
  const properties = { $browser: "Chrome", plan: "pro", seats: 3, beta: true, tags: ["a", "b"], gone: null };
  await send(service, { api_key: KEY, batch: [{ event: "columns", distinct_id: "mat-1", properties }] });
  await send(service, { api_key: KEY, batch: [{ event: "columns", distinct_id: "mat-2", properties: {} }] });
  for (const table of ["events", "events_resolved"]) {
    const rows = await service.db.rows<Record<string, string>>(
      `SELECT distinct_id, \`mat_$browser\` AS browser, mat_plan AS plan, mat_seats AS seats, mat_beta AS beta,
              mat_tags AS tags, mat_gone AS gone
       FROM ${service.db.table(table)} WHERE event = 'columns' ORDER BY distinct_id`,
    );
    // a string as sent, a number or boolean or array as its JSON, '' for null and for a key the event lacks
    expect(rows).toEqual([
      { distinct_id: "mat-1", browser: "Chrome", plan: "pro", seats: "3", beta: "true", tags: '["a","b"]', gone: "" },
      { distinct_id: "mat-2", browser: "", plan: "", seats: "", beta: "", tags: "", gone: "" },
    ]);
  }
  const [star] = await service.db.rows<Record<string, unknown>>(
    `SELECT * FROM ${service.db.table("events")} WHERE event = 'columns' LIMIT 1`,
  );
  expect(Object.keys(star!).filter((name) => name.startsWith("mat_"))).toEqual([]);
});

test("every column reads its key from one tuple of all the keys: the engine parses an event's properties once", async () => {
  const { columns, tuples } = await tuplesNamed(service.db, "mat_");
  expect(columns).toBe(6);
  expect(tuples).toEqual([
    "tupleElement(JSONExtract(properties, 'Tuple(`$browser` String, `beta` String, `gone` String, `plan` String, `seats` String, `tags` String)')",
  ]);
});

test("by default the keys insights break down by are columns", async () => {
  const database = uniqueDatabase();
  await onDatabase(database, {}, async (_, db) => {
    expect(Object.keys(await columnsNamed(db, "mat_"))).toEqual(
      MATERIALIZED_BY_DEFAULT.map((key) => `mat_${key}`).sort(),
    );
    await db.command(`DROP DATABASE \`${database}\``);
  });
});

test("a database without them gains them at startup (old rows read them from their properties); a key added later joins the one tuple, a key no longer listed keeps its column", async () => {
  const database = uniqueDatabase();
  const warned = spyOn(console, "warn").mockImplementation(() => {});
  try {
    // made by a version before property columns, or with none listed
    await onDatabase(database, { MATERIALIZED_PROPERTIES: "none" }, async (storage, db) => {
      await ingestInto(storage, [{ event: "before", distinct_id: "u", properties: { plan: "free", seats: 1 } }]);
      expect(await columnsNamed(db, "mat_")).toEqual({});
    });
    await onDatabase(database, { MATERIALIZED_PROPERTIES: "plan" }, async (storage) => {
      await ingestInto(storage, [{ event: "plan only", distinct_id: "u", properties: { plan: "pro", seats: 2 } }]);
    });
    expect(warned.mock.calls.map((call) => String(call[0]))).toContain(
      `Schema: \`${database}\`.\`events\`.mat_plan is missing or narrower than String; adding or widening it.`,
    );
    await onDatabase(database, { MATERIALIZED_PROPERTIES: "seats" }, async (storage, db) => {
      await ingestInto(storage, [{ event: "seats listed", distinct_id: "u", properties: { plan: "team", seats: 3 } }]);
      const expressions = await columnsNamed(db, "mat_");
      expect(Object.keys(expressions)).toEqual(["mat_plan", "mat_seats"]);
      expect(expressions.mat_plan).toContain("Tuple(`plan` String, `seats` String)");
      expect(expressions.mat_seats).toContain("Tuple(`plan` String, `seats` String)");
      const rows = await db.rows(
        `SELECT event, mat_plan, mat_seats FROM ${db.table("events")} ORDER BY timestamp, event`,
      );
      expect(rows).toEqual([
        { event: "before", mat_plan: "free", mat_seats: "1" },
        { event: "plan only", mat_plan: "pro", mat_seats: "2" },
        { event: "seats listed", mat_plan: "team", mat_seats: "3" },
      ]);
      await db.command(`DROP DATABASE \`${database}\``);
    });
  } finally {
    warned.mockRestore();
  }
});
