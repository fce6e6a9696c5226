import { afterEach, expect, test } from "bun:test";
import { literal } from "../../src/storage/sql";
import { settleDays } from "../../src/write/settle";
import { count } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";
let service: TestService | undefined;

afterEach(async () => {
  await service?.stop();
  service = undefined;
});

/** The active parts of each partition of `events`: their names, by partition id. */
async function partsOf(service: TestService): Promise<Record<string, string[]>> {
  const rows = await service.db.rows<{ partition: string; parts: string[] }>(
    `SELECT partition_id AS partition, groupArray(name) AS parts FROM system.parts
     WHERE database = ${literal(service.db.database)} AND table = 'events' AND active GROUP BY partition`,
  );
  return Object.fromEntries(rows.map((row) => [row.partition, row.parts.toSorted()]));
}

/** Sends `n` events on `day` (`YYYY-MM-DD`) in one request, so one flush: one part. */
async function sendOn(service: TestService, day: string, n: number, name = "e"): Promise<void> {
  const batch = Array.from({ length: n }, (_, i) => ({
    event: name,
    distinct_id: `user-${i % 50}`,
    timestamp: `${day}T12:${String(i % 60).padStart(2, "0")}:00Z`,
    properties: { $current_url: `https://example.com/page/${i}`, plan: "pro" },
  }));
  expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
}

const daysBack = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);
const id = (day: string) => day.replaceAll("-", "");

test("a quiet day in several parts is merged into one, copies collapsed, the view unchanged; a young one waits", async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, SETTLE_AFTER_S: "0" });
  const day = daysBack(3);
  await sendOn(service, day, 200);
  await sendOn(service, day, 200, "f");
  const retried = { event: "once", distinct_id: "user-1", timestamp: `${day}T08:00:00Z`, uuid: crypto.randomUUID() };
  for (let i = 0; i < 2; i++) expect((await send(service, { api_key: KEY, batch: [retried] })).status).toBe(200);
  expect((await partsOf(service))[id(day)]).toHaveLength(4);
  const resolved = await count(service.db, "events_resolved");
  expect(resolved).toBe(401);

  // parts written within the quiet time are left alone
  expect(await settleDays(service.db, 3_600_000)).toBeUndefined();
  expect((await partsOf(service))[id(day)]).toHaveLength(4);

  expect((await settleDays(service.db, 0))?.days).toEqual([id(day)]);
  expect((await partsOf(service))[id(day)]).toHaveLength(1);
  expect(await count(service.db, "events")).toBe(401); // the copy is gone from the table itself
  expect(await count(service.db, "events_resolved")).toBe(resolved);
  expect(await settleDays(service.db, 0)).toBeUndefined(); // nothing left to do
});

test("a late event's small part is not worth rewriting a settled day for; late events of an eighth of it are", async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, SETTLE_AFTER_S: "0" });
  const day = daysBack(2);
  await sendOn(service, day, 2_000);
  await sendOn(service, day, 2_000);
  await settleDays(service.db, 0);
  const [settled] = (await partsOf(service))[id(day)]!;

  await sendOn(service, day, 1, "late");
  expect(await settleDays(service.db, 0)).toBeUndefined();
  expect((await partsOf(service))[id(day)]).toContain(settled!); // not rewritten
  expect(await count(service.db, "events_resolved", "event = 'late'")).toBe(1);

  await sendOn(service, day, 1_000, "late");
  expect((await settleDays(service.db, 0))?.days).toEqual([id(day)]);
  expect((await partsOf(service))[id(day)]).toHaveLength(1);
  expect((await partsOf(service))[id(day)]).not.toContain(settled!);
});

test("a run settles at most 8 days, the next the rest", async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, SETTLE_AFTER_S: "0" });
  const days = Array.from({ length: 10 }, (_, i) => daysBack(20 + i));
  for (let round = 0; round < 2; round++) {
    const batch = days.map((day, i) => ({
      event: "e",
      distinct_id: `user-${i}`,
      timestamp: `${day}T10:0${round}:00Z`,
    }));
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
  }
  expect((await settleDays(service.db, 0))?.days).toHaveLength(8);
  expect((await settleDays(service.db, 0))?.days).toHaveLength(2);
  const parts = await partsOf(service);
  for (const day of days) expect(parts[id(day)]).toHaveLength(1);
});

test("a month partition (a date before 2020) is never settled: it would be rewritten whole", async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, SETTLE_AFTER_S: "0" });
  await sendOn(service, "2019-06-01", 100);
  await sendOn(service, "2019-06-02", 100);
  expect(await settleDays(service.db, 0)).toBeUndefined();
  expect((await partsOf(service))["201906"]).toHaveLength(2);
});

test("the service settles quiet days by itself, every SETTLE_AFTER_S", async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, SETTLE_AFTER_S: "1" });
  const day = daysBack(5);
  await sendOn(service, day, 100);
  await sendOn(service, day, 100);
  const deadline = Date.now() + 20_000;
  while ((await partsOf(service))[id(day)]?.length !== 1 && Date.now() < deadline) await Bun.sleep(250);
  expect((await partsOf(service))[id(day)]).toHaveLength(1);
  expect(await count(service.db, "events_resolved")).toBe(200);
});
