import { expect, test } from "bun:test";
import { count, links } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";

/** Each event's person as `events_resolved` gives it, by event name. */
async function resolvedPersons(service: TestService): Promise<Record<string, string>> {
  const rows = await service.db.rows<{ event: string; person_id: string }>(
    `SELECT event, toString(person_id) AS person_id FROM ${service.db.table("events_resolved")}`,
  );
  return Object.fromEntries(rows.map((row) => [row.event, row.person_id]));
}

/** Two persons, each with an event, then merged: the first event was stored on the person merged away. */
async function mergeAfterEvents(service: TestService): Promise<void> {
  for (const batch of [
    [{ event: "anon_event", distinct_id: "o-anon", timestamp: "2024-01-02T00:00:00Z" }],
    [{ event: "user_event", distinct_id: "o-user", timestamp: "2024-01-01T00:00:00Z" }],
    [{ event: "$identify", distinct_id: "o-user", properties: { $anon_distinct_id: "o-anon" } }],
  ]) {
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
  }
}

test("a merge writes where the merged-away person's events belong; events_resolved reads them there", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY });
  try {
    await mergeAfterEvents(service);
    const survivor = (await links(service.db)).get("o-anon")!.person_id;
    expect((await links(service.db)).get("o-user")!.person_id).toBe(survivor);
    // the user's person was born first (earlier timestamp), so the anonymous one is merged away
    expect(await count(service.db, "events", `event = 'anon_event' AND person_id != '${survivor}'`)).toBe(1);
    expect(await resolvedPersons(service)).toEqual({ anon_event: survivor, user_event: survivor, $identify: survivor });
  } finally {
    await service.stop();
  }
});

test("a database written before person_overrides existed gets it filled from its persons and links at startup", async () => {
  const first = await startService({ PUBLIC_API_KEYS: KEY });
  await mergeAfterEvents(first);
  await first.db.command(`TRUNCATE TABLE ${first.db.table("person_overrides")}`);
  await first.stop({ drop: false });
  const second = await startService({ PUBLIC_API_KEYS: KEY, CLICKHOUSE_DATABASE: first.config.clickhouse.database });
  try {
    const survivor = (await links(second.db)).get("o-anon")!.person_id;
    expect(await count(second.db, "person_overrides")).toBe(1);
    expect(await resolvedPersons(second)).toEqual({ anon_event: survivor, user_event: survivor, $identify: survivor });
  } finally {
    await second.stop();
  }
});
