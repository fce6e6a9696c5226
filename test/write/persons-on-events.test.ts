import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { personIdFor } from "../../src/identity";
import type { ClickHouse } from "../../src/storage/clickhouse";
import { count, personOf } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

// PERSONS_ON_EVENTS: each event stores its person as its flush left it, as PostHog does.

const KEY = "key-poe";

interface OnEvent {
  event: string;
  distinct_id: string;
  person_id: string;
  plan: string;
  properties: string;
  created: string;
}

/** Each event's stored person (deduplicated), in the order sent. */
async function onEvents(db: ClickHouse, table = "events"): Promise<OnEvent[]> {
  return db.rows<OnEvent>(
    `SELECT event, distinct_id, toString(person_id) AS person_id, JSONExtractString(person_properties, 'plan') AS plan,
       person_properties AS properties, toString(person_created_at) AS created
     FROM ${db.table(table)} ${table === "events" ? "FINAL" : ""} ORDER BY timestamp, uuid`,
  );
}

const at = (second: number) => `2026-03-01T00:00:${String(second).padStart(2, "0")}Z`;
const batch = (...events: object[]) => ({ api_key: KEY, batch: events });

describe("PERSONS_ON_EVENTS=1", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ PUBLIC_API_KEYS: KEY, PERSONS_ON_EVENTS: "1", PERSON_AUTO_PROPERTIES: "0" });
  });
  afterAll(() => service.stop());

  test("an event carries its person's properties and creation as its flush left them; later changes leave it as it was", async () => {
    expect(
      (
        await send(
          service,
          batch({ event: "signup", distinct_id: "u1", timestamp: at(1), properties: { $set: { plan: "free" } } }),
        )
      ).status,
    ).toBe(200);
    expect((await send(service, batch({ event: "view", distinct_id: "u1", timestamp: at(2) }))).status).toBe(200);
    expect(
      (
        await send(
          service,
          batch({ event: "upgrade", distinct_id: "u1", timestamp: at(3), properties: { $set: { plan: "pro" } } }),
        )
      ).status,
    ).toBe(200);
    expect((await send(service, batch({ event: "view", distinct_id: "u1", timestamp: at(4) }))).status).toBe(200);
    const person = (await personOf(service.db, "u1"))!;
    const stored = (await onEvents(service.db)).filter((row) => row.distinct_id === "u1");
    expect(stored.map(({ event, plan }) => [event, plan])).toEqual([
      ["signup", "free"], // its own $set is in: the person as the flush left it
      ["view", "free"],
      ["upgrade", "pro"],
      ["view", "pro"],
    ]);
    expect(new Set(stored.map((row) => row.created))).toEqual(new Set([person.created_at]));
    expect(JSON.parse(stored.at(-1)!.properties)).toEqual(person.properties);
  });

  test("a merge: events before it keep the person they had; events_resolved moves them, not their properties", async () => {
    const sent = await send(
      service,
      batch({ event: "$pageview", distinct_id: "anon-2", timestamp: at(10), properties: { $set: { seen: "ad" } } }),
    );
    expect(sent.status).toBe(200);
    expect(
      (
        await send(
          service,
          batch({ event: "signup", distinct_id: "u2", timestamp: at(11), properties: { $set: { plan: "team" } } }),
        )
      ).status,
    ).toBe(200);
    expect(
      (
        await send(
          service,
          batch({
            event: "$identify",
            distinct_id: "u2",
            timestamp: at(12),
            properties: { $anon_distinct_id: "anon-2" },
          }),
        )
      ).status,
    ).toBe(200);
    const resolved = (await onEvents(service.db, "events_resolved")).filter((row) =>
      ["anon-2", "u2"].includes(row.distinct_id),
    );
    const survivor = (await personOf(service.db, "u2"))!;
    expect(resolved.map(({ event, person_id }) => [event, person_id])).toEqual([
      ["$pageview", survivor.id],
      ["signup", survivor.id],
      ["$identify", survivor.id],
    ]);
    // the pageview's copy is anon-2's person before the merge; the $identify's is the merged one
    expect(JSON.parse(resolved[0]!.properties)).toEqual({ seen: "ad" });
    expect(JSON.parse(resolved[1]!.properties)).toEqual({ plan: "team" });
    expect(JSON.parse(resolved[2]!.properties)).toEqual(survivor.properties);
    expect(survivor.properties).toMatchObject({ seen: "ad", plan: "team" });
  });

  test("a personless event has none: empty properties, 1970; a retried event is still one row", async () => {
    const event = {
      event: "$pageview",
      distinct_id: "visitor-3",
      uuid: "0190b4a1-0000-7000-8000-0000000000e3",
      timestamp: at(20),
      properties: { $process_person_profile: false },
    };
    expect((await send(service, batch(event))).status).toBe(200);
    expect((await send(service, batch(event))).status).toBe(200);
    const stored = (await onEvents(service.db)).filter((row) => row.distinct_id === "visitor-3");
    expect(stored).toEqual([
      expect.objectContaining({
        person_id: personIdFor("visitor-3"),
        properties: "",
        created: "1970-01-01 00:00:00.000000",
      }),
    ]);
  });

  test("a breakdown by a person property reads events alone", async () => {
    const rows = await service.db.rows<{ plan: string; n: string }>(
      `SELECT JSONExtractString(person_properties, 'plan') AS plan, toString(count()) AS n
       FROM ${service.db.table("events")} FINAL WHERE distinct_id = 'u1' GROUP BY plan ORDER BY plan`,
    );
    expect(rows).toEqual([
      { plan: "free", n: "2" },
      { plan: "pro", n: "2" },
    ]);
  });
});

test("PERSONS_ON_EVENTS=0 (the default): the columns stay empty", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY });
  try {
    expect(
      (await send(service, batch({ event: "signup", distinct_id: "u9", properties: { $set: { plan: "free" } } })))
        .status,
    ).toBe(200);
    expect(await count(service.db, "events", "person_properties = '' AND person_created_at = 0")).toBe(1);
  } finally {
    await service.stop();
  }
});
