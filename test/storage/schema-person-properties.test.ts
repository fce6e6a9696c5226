import { afterAll, beforeAll, expect, spyOn, test } from "bun:test";
import { PERSON_MATERIALIZED_BY_DEFAULT } from "../../src/config";
import { columnsNamed, ingestInto, onDatabase, tuplesNamed } from "../helpers/columns";
import { send, startService, type TestService, uniqueDatabase } from "../helpers/service";

// MATERIALIZED_PERSON_PROPERTIES: `pmat_<key>`, a key of `person_properties` (PERSONS_ON_EVENTS) in a column.

const KEY = "key-pmat";
let service: TestService;

beforeAll(async () => {
  service = await startService({
    PUBLIC_API_KEYS: KEY,
    PERSONS_ON_EVENTS: "1",
    PERSON_AUTO_PROPERTIES: "0",
    MATERIALIZED_PERSON_PROPERTIES: "email,plan,seats,beta,tags,org,gone",
  });
});
afterAll(() => service.stop());

const at = (second: number) => `2026-03-01T00:00:${String(second).padStart(2, "0")}Z`;
const sendOne = async (event: object) =>
  expect((await send(service, { api_key: KEY, batch: [event] })).status).toBe(200);

test("each key listed is a column of the person's value as text, '' where absent; SELECT * leaves them out; events_resolved has them", async () => {
  const $set = {
    email: "ada@example.com",
    plan: "pro",
    seats: 3,
    beta: true,
    tags: ["a", "b"],
    org: { id: 7 },
    gone: null,
  };
  await sendOne({ event: "kinds", distinct_id: "pmat-1", timestamp: at(1), properties: { $set } });
  await sendOne({ event: "kinds", distinct_id: "pmat-2", timestamp: at(1), properties: { $set: { other: "x" } } });
  for (const table of ["events", "events_resolved"]) {
    const rows = await service.db.rows<Record<string, string>>(
      `SELECT distinct_id, pmat_email AS email, pmat_plan AS plan, pmat_seats AS seats, pmat_beta AS beta,
              pmat_tags AS tags, pmat_org AS org, pmat_gone AS gone
       FROM ${service.db.table(table)} WHERE event = 'kinds' ORDER BY distinct_id`,
    );
    // a string as set, a number, boolean, array or object as its JSON, '' for null and for a key the person lacks
    expect(rows).toEqual([
      {
        distinct_id: "pmat-1",
        email: "ada@example.com",
        plan: "pro",
        seats: "3",
        beta: "true",
        tags: '["a","b"]',
        org: '{"id":7}',
        gone: "",
      },
      { distinct_id: "pmat-2", email: "", plan: "", seats: "", beta: "", tags: "", org: "", gone: "" },
    ]);
  }
  const [star] = await service.db.rows<Record<string, unknown>>(
    `SELECT * FROM ${service.db.table("events")} WHERE event = 'kinds' LIMIT 1`,
  );
  expect(Object.keys(star!).filter((name) => name.startsWith("pmat_"))).toEqual([]);
});

test("a $set shows in the events after it (its own included), not in the ones before: the person as each flush left it", async () => {
  await sendOne({ event: "visit", distinct_id: "pmat-3", timestamp: at(10) });
  await sendOne({ event: "signup", distinct_id: "pmat-3", timestamp: at(11), properties: { $set: { plan: "free" } } });
  await sendOne({ event: "view", distinct_id: "pmat-3", timestamp: at(12) });
  await sendOne({ event: "upgrade", distinct_id: "pmat-3", timestamp: at(13), properties: { $set: { plan: "pro" } } });
  await sendOne({ event: "view", distinct_id: "pmat-3", timestamp: at(14) });
  const rows = await service.db.rows<{ event: string; plan: string; json: string }>(
    `SELECT event, pmat_plan AS plan, JSONExtractString(person_properties, 'plan') AS json
     FROM ${service.db.table("events")} FINAL WHERE distinct_id = 'pmat-3' ORDER BY timestamp`,
  );
  expect(rows.map(({ event, plan }) => [event, plan])).toEqual([
    ["visit", ""],
    ["signup", "free"],
    ["view", "free"],
    ["upgrade", "pro"],
    ["view", "pro"],
  ]);
  // the column says what person_properties says
  expect(rows.every((row) => row.plan === row.json)).toBe(true);
});

test("every column reads its key from one tuple of all the keys: the engine parses an event's person once", async () => {
  const { columns, tuples } = await tuplesNamed(service.db, "pmat_");
  expect(columns).toBe(7);
  expect(tuples).toEqual([
    "tupleElement(JSONExtract(person_properties, 'Tuple(`beta` String, `email` String, `gone` String, `org` String, `plan` String, `seats` String, `tags` String)')",
  ]);
});

test("by default where a person came from is a column, with PERSONS_ON_EVENTS=0 too, empty there", async () => {
  const database = uniqueDatabase();
  await onDatabase(database, { PERSON_AUTO_PROPERTIES: "0" }, async (storage, db) => {
    expect(Object.keys(await columnsNamed(db, "pmat_"))).toEqual(
      PERSON_MATERIALIZED_BY_DEFAULT.map((key) => `pmat_${key}`).sort(),
    );
    await ingestInto(storage, [{ event: "off", distinct_id: "u", properties: { $set: { $initial_os: "Mac OS X" } } }]);
    const rows = await db.rows(`SELECT person_properties, \`pmat_$initial_os\` AS os FROM ${db.table("events")}`);
    expect(rows).toEqual([{ person_properties: "", os: "" }]);
    await db.command(`DROP DATABASE \`${database}\``);
  });
});

test("a database without them gains them at startup (old rows read them from person_properties); a key added later joins the one tuple, a key no longer listed keeps its column", async () => {
  const database = uniqueDatabase();
  const warned = spyOn(console, "warn").mockImplementation(() => {});
  const on = { PERSONS_ON_EVENTS: "1" };
  try {
    // made by a version before person property columns, or with none listed
    await onDatabase(
      database,
      { PERSON_AUTO_PROPERTIES: "0", ...on, MATERIALIZED_PERSON_PROPERTIES: "none" },
      async (storage, db) => {
        await ingestInto(storage, [
          { event: "before", distinct_id: "u", properties: { $set: { plan: "free", seats: 1 } } },
        ]);
        expect(await columnsNamed(db, "pmat_")).toEqual({});
      },
    );
    await onDatabase(
      database,
      { PERSON_AUTO_PROPERTIES: "0", ...on, MATERIALIZED_PERSON_PROPERTIES: "plan" },
      async (storage) => {
        await ingestInto(storage, [
          { event: "plan only", distinct_id: "u", properties: { $set: { plan: "pro", seats: 2 } } },
        ]);
      },
    );
    expect(warned.mock.calls.map((call) => String(call[0]))).toContain(
      `Schema: \`${database}\`.\`events\`.pmat_plan is missing or narrower than String; adding or widening it.`,
    );
    await onDatabase(
      database,
      { PERSON_AUTO_PROPERTIES: "0", ...on, MATERIALIZED_PERSON_PROPERTIES: "seats" },
      async (storage, db) => {
        await ingestInto(storage, [
          { event: "seats", distinct_id: "u", properties: { $set: { plan: "team", seats: 3 } } },
        ]);
        const expressions = await columnsNamed(db, "pmat_");
        expect(Object.keys(expressions)).toEqual(["pmat_plan", "pmat_seats"]);
        expect(expressions.pmat_plan).toContain("Tuple(`plan` String, `seats` String)");
        expect(expressions.pmat_seats).toContain("Tuple(`plan` String, `seats` String)");
        const rows = await db.rows(
          `SELECT event, pmat_plan, pmat_seats FROM ${db.table("events")} ORDER BY timestamp, event`,
        );
        expect(rows).toEqual([
          { event: "before", pmat_plan: "free", pmat_seats: "1" },
          { event: "plan only", pmat_plan: "pro", pmat_seats: "2" },
          { event: "seats", pmat_plan: "team", pmat_seats: "3" },
        ]);
        // events_resolved carries them, as it does the mat_ columns
        const resolved = await db.rows(`SELECT pmat_seats FROM ${db.table("events_resolved")} WHERE event = 'seats'`);
        expect(resolved).toEqual([{ pmat_seats: "3" }]);
        await db.command(`DROP DATABASE \`${database}\``);
      },
    );
  } finally {
    warned.mockRestore();
  }
});
