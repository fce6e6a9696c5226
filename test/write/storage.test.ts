import { afterAll, beforeAll, expect, spyOn, test } from "bun:test";
import { loadConfig } from "../../src/config";
import { IngestError } from "../../src/contract/errors";
import { ClickHouse } from "../../src/storage/clickhouse";
import { createSchema } from "../../src/storage/schema";
import { Storage, storageOptions } from "../../src/write";
import { captured } from "../helpers/captured";
import { count } from "../helpers/rows";
import { clickhouseEnv, send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";
let service: TestService;

beforeAll(async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY });
});
afterAll(() => service.stop());

test("a write a missing table refuses is a 503 naming it; once the database is repaired, the client's retry succeeds without duplicates", async () => {
  const body = {
    api_key: KEY,
    batch: [
      {
        event: "will_fail",
        distinct_id: "user-500",
        uuid: "0190b4a1-0000-7000-8000-0000000005a0",
        timestamp: "2024-06-01T00:00:00Z",
      },
    ],
  };
  await service.db.command(`DROP TABLE ${service.db.table("sessions_mv")}`);
  await service.db.command(`DROP TABLE ${service.db.table("events")}`);
  // what an operator must fix, retried slowly: SDKs keep the events (docs/behaviour.md#when-the-database-refuses-the-events)
  const refused = await send(service, body);
  expect([refused.status, refused.headers.get("retry-after"), refused.body]).toEqual([
    503,
    "60",
    {
      status: "error",
      error:
        "The database refuses these events (UNKNOWN_TABLE on table events): an operator must fix the table; retry later",
    },
  ]);

  await createSchema(service.db); // the operator repairs the database; the client retries
  expect(await send(service, body)).toMatchObject({ status: 200, body: { ingested: 1 } });
  expect(await send(service, body)).toMatchObject({ status: 200, body: { ingested: 1 } });
  expect(await count(service.db, "events", "event = 'will_fail'", { final: true })).toBe(1);
});

test("once closing, the storage refuses new events with a retryable 503, and what it accepted is written", async () => {
  const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: service.config.clickhouse.database });
  const storage = await Storage.open(storageOptions(config));
  const { events } = await captured([{ event: "before_close", distinct_id: "closing" }]);
  const accepted = storage.ingest(events);
  const closed = storage.close();
  const refused = await storage.ingest(events).catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(IngestError);
  expect(refused).toMatchObject({ code: "shutting_down", status: 503, headers: { "Retry-After": "5" } });
  await accepted;
  await closed;
  expect(await count(service.db, "events", "event = 'before_close'")).toBe(1);
});

test.skipIf(Boolean(process.env.CLICKHOUSE_URL))(
  "a sole writer preloads its links with no observer, as the import in process opens it: a new ID reads nothing",
  async () => {
    const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: service.config.clickhouse.database });
    expect(storageOptions(config).identity.soleWriter).toBe(true);
    const storage = await Storage.open(storageOptions(config));
    const reads = spyOn(ClickHouse.prototype, "rowsIn");
    try {
      const { events } = await captured([{ event: "first", distinct_id: "preloaded-new" }]);
      await storage.ingest(events);
      // a complete cache knows an ID it lacks is new: neither its link nor its person is read
      expect(reads).not.toHaveBeenCalled();
    } finally {
      reads.mockRestore();
      await storage.close();
    }
    expect(await count(service.db, "events", "distinct_id = 'preloaded-new'")).toBe(1);
  },
);

test("past maxQueuedEvents new events are refused with a retryable 503; a batch is taken whenever none wait", async () => {
  const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: service.config.clickhouse.database });
  const storage = await Storage.open({ ...storageOptions(config), maxQueuedEvents: 1_000 });
  const batch = async (name: string, size: number) =>
    (await captured(Array.from({ length: size }, (_, i) => ({ event: name, distinct_id: `queue-${i}` })))).events;
  const [a, b, c, big] = await Promise.all([
    batch("queued_a", 800),
    batch("queued_b", 800),
    batch("queued_c", 800),
    batch("queued_big", 5_000),
  ]);
  const first = storage.ingest(a); // taken by a flush at once
  const second = storage.ingest(b); // waits: 800 queued
  const refused = await storage.ingest(c).catch((error: unknown) => error); // 1,600 would wait: over 1,000
  expect(refused).toMatchObject({ code: "busy", status: 503, headers: { "Retry-After": "1" } });
  await Promise.all([first, second]);
  await storage.ingest(big); // nothing waits: taken, however large
  await storage.close();
  const stored = await service.db.rows<{ event: string; n: string | number }>(
    `SELECT event, count() AS n FROM ${service.db.table("events")} WHERE event LIKE 'queued_%' GROUP BY event ORDER BY event`,
  );
  expect(stored.map((row) => [row.event, Number(row.n)])).toEqual([
    ["queued_a", 800],
    ["queued_b", 800],
    ["queued_big", 5_000],
  ]);
});

test("flushes overlap, and a batch is answered only once its events, persons and links are stored", async () => {
  const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: service.config.clickhouse.database });
  // a flush a batch: the next one resolves identity while this one's events go in
  const storage = await Storage.open({ ...storageOptions(config), maxFlushEvents: 300 });
  const batches = await Promise.all(
    Array.from({ length: 6 }, (_, b) =>
      captured(
        Array.from({ length: 300 }, (_, i) => ({
          event: `overlap_${b}`,
          distinct_id: `overlap-${b}-${i % 50}`,
          properties: { $set: { batch: b } },
        })),
      ),
    ),
  );
  const found = await Promise.all(
    batches.map(async ({ events }, b) => {
      await storage.ingest(events);
      const [stored] = await service.db.rows<{ events: string; linked: string; persons: string }>(
        `SELECT count() AS events, countIf(l.distinct_id != '') AS linked, countIf(p.id IS NOT NULL) AS persons
         FROM ${service.db.table("events")} AS e
         LEFT JOIN (SELECT distinct_id, argMax(person_id, version) AS person_id FROM ${service.db.table("person_distinct_ids")} GROUP BY distinct_id) AS l
           ON l.distinct_id = e.distinct_id AND l.person_id = e.person_id
         LEFT JOIN (SELECT DISTINCT id FROM ${service.db.table("persons")}) AS p ON p.id = e.person_id
         WHERE e.event = 'overlap_${b}' SETTINGS join_use_nulls = 1`,
      );
      return [Number(stored!.events), Number(stored!.linked), Number(stored!.persons)];
    }),
  );
  await storage.close();
  expect(found).toEqual(batches.map(() => [300, 300, 300]));
});

test("embedded, the service is the sole writer of its tables unless its query port takes writes", () => {
  const soleWriter = (env: Record<string, string>) =>
    storageOptions(loadConfig({ DATA_DIR: "/tmp/any", ...env })).identity.soleWriter;
  expect(soleWriter({})).toBe(true);
  expect(soleWriter({ QUERY_PORT: "8123", QUERY_PASSWORD: "pw" })).toBe(true);
  expect(soleWriter({ QUERY_PORT: "8123", QUERY_PASSWORD: "pw", QUERY_READONLY: "0" })).toBe(false);
  expect(soleWriter({ CLICKHOUSE_URL: "http://127.0.0.1:8123" })).toBe(false);
});
