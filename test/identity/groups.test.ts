import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { count, personOf } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";

interface StoredGroup {
  group_type: string;
  group_key: string;
  properties: Record<string, unknown>;
  created_at: string;
  version: number;
}

async function groups(service: TestService): Promise<Map<string, StoredGroup>> {
  const rows = await service.db.rows<
    Omit<StoredGroup, "properties" | "version"> & { properties: string; version: string }
  >(
    `SELECT group_type, group_key, properties, toString(created_at) AS created_at, toString(version) AS version
     FROM ${service.db.table("groups")} FINAL`,
  );
  return new Map(
    rows.map((row) => [
      `${row.group_type}:${row.group_key}`,
      { ...row, properties: JSON.parse(row.properties), version: Number(row.version) },
    ]),
  );
}

const identify = (key: string, set: unknown, timestamp: string, type: unknown = "company") => ({
  event: "$groupidentify",
  distinct_id: `$company_${key}`,
  timestamp,
  properties: { $group_type: type, $group_key: key, $group_set: set },
});

describe("$groupidentify", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ PUBLIC_API_KEYS: KEY });
  });
  afterAll(() => service.stop());
  const capture = async (batch: object[]) => expect((await send(service, { api_key: KEY, batch })).status).toBe(200);

  test("makes a group with its properties; the made-up distinct ID gets no person", async () => {
    await capture([identify("acme", { plan: "pro", seats: 5 }, "2026-01-01T00:00:00Z")]);
    expect((await groups(service)).get("company:acme")).toEqual({
      group_type: "company",
      group_key: "acme",
      properties: { plan: "pro", seats: 5 },
      created_at: "2026-01-01 00:00:00.000000",
      version: 3,
    });
    expect(await personOf(service.db, "$company_acme")).toBeUndefined();
    expect(await count(service.db, "events", "event = '$groupidentify'")).toBe(1);
  });

  test("$group_set merges as $set does: by event timestamp, whatever order the events arrive in", async () => {
    await capture([identify("globex", { plan: "team", region: "eu" }, "2026-01-03T00:00:00Z")]);
    await capture([identify("globex", { plan: "free", founded: 1999 }, "2026-01-02T00:00:00Z")]);
    const group = (await groups(service)).get("company:globex")!;
    expect(group.properties).toEqual({ plan: "team", region: "eu", founded: 1999 });
    expect(group.created_at).toBe("2026-01-02 00:00:00.000000");
    await capture([identify("globex", { plan: "enterprise" }, "2026-01-04T00:00:00Z")]);
    const later = (await groups(service)).get("company:globex")!;
    expect(later.properties).toMatchObject({ plan: "enterprise", region: "eu" });
    expect(later.version).toBeGreaterThan(group.version);
  });

  test("no type or key, or not text: a plain event, no group; a number key is its digits", async () => {
    await capture([
      identify("", { a: 1 }, "2026-01-01T00:00:00Z"),
      identify("k", { a: 1 }, "2026-01-01T00:00:00Z", { nested: true }),
      { event: "$groupidentify", distinct_id: "x", properties: { $group_type: "team", $group_key: 42 } },
    ]);
    const stored = await groups(service);
    expect(
      [...stored.keys()].filter((id) => !id.startsWith("company:acme") && !id.startsWith("company:globex")),
    ).toEqual(["team:42"]);
    expect(stored.get("team:42")!.properties).toEqual({});
  });

  test("events keep $groups as sent, and join their groups as docs/identity.md shows", async () => {
    await capture([
      { event: "invoice paid", distinct_id: "g-user", properties: { $groups: { company: "acme" }, amount: 10 } },
      { event: "invoice paid", distinct_id: "g-user", properties: { $groups: { company: "globex" }, amount: 5 } },
    ]);
    const rows = await service.db.rows<{ plan: string; paid: number }>(
      `SELECT JSONExtractString(g.properties, 'plan') AS plan, sum(JSONExtractFloat(e.properties, 'amount')) AS paid
       FROM ${service.db.table("events_resolved")} AS e
       JOIN ${service.db.table("groups")} AS g FINAL
         ON g.group_type = 'company' AND g.group_key = JSONExtractString(e.properties, '$groups', 'company')
       WHERE e.event = 'invoice paid' GROUP BY plan ORDER BY plan`,
    );
    expect(rows).toEqual([
      { plan: "enterprise", paid: 5 },
      { plan: "pro", paid: 10 },
    ]);
  });
});

test("two instances setting one group's keys at once end with every key, whichever writes last", async () => {
  const env = { PUBLIC_API_KEYS: KEY };
  const seams = { identity: { soleWriter: false } };
  const a = await startService(env, seams);
  const b = await startService({ ...env, CLICKHOUSE_DATABASE: a.config.clickhouse.database }, seams);
  try {
    const sends = Array.from({ length: 20 }, (_, i) =>
      send(i % 2 === 0 ? a : b, {
        api_key: KEY,
        batch: [identify("initech", { [`k${i}`]: i, last: i }, `2026-02-01T00:00:${String(i).padStart(2, "0")}Z`)],
      }),
    );
    for (const sent of await Promise.all(sends)) expect(sent.status).toBe(200);
    const group = (await groups(a)).get("company:initech")!;
    expect(group.properties).toEqual({
      ...Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i])),
      last: 19,
    });
    expect(group.version).toBe(60);
  } finally {
    await b.stop({ drop: false });
    await a.stop();
  }
});

test("$process_person_profile: false makes a $groupidentify name no group (PostHog drops it); PERSONLESS_EVENTS=0 reads the flag as any property", async () => {
  const sent = identify("hooli", { plan: "pro" }, "2026-03-01T00:00:00Z");
  const flagged = { ...sent, properties: { ...sent.properties, $process_person_profile: false } };
  for (const [personlessEvents, named] of [
    ["1", false],
    ["0", true],
  ] as const) {
    const service = await startService({ PUBLIC_API_KEYS: KEY, PERSONLESS_EVENTS: personlessEvents });
    try {
      expect((await send(service, { api_key: KEY, batch: [flagged] })).status).toBe(200);
      expect((await groups(service)).has("company:hooli")).toBe(named);
      expect(await count(service.db, "events", "event = '$groupidentify'")).toBe(1);
    } finally {
      await service.stop();
    }
  }
});
