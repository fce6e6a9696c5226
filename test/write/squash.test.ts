import { afterEach, expect, test } from "bun:test";
import { squashedBefore, squashOverrides } from "../../src/write/squash";
import { count, links } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";
let service: TestService | undefined;

afterEach(async () => {
  await service?.stop();
  service = undefined;
});

/** Each event's person, by event name, as `table` stores it. */
async function personsIn(service: TestService, table: "events" | "events_resolved"): Promise<Record<string, string>> {
  const from = table === "events" ? `${service.db.table(table)} FINAL` : service.db.table(table);
  const rows = await service.db.rows<{ event: string; person_id: string }>(
    `SELECT event, toString(person_id) AS person_id FROM ${from}`,
  );
  return Object.fromEntries(rows.map((row) => [row.event, row.person_id]));
}

/** The overrides `events_resolved` joins: those written since the last squash. */
async function unsquashed(service: TestService): Promise<number> {
  const since = await squashedBefore(service.db);
  return count(service.db, "person_overrides", `written_at >= fromUnixTimestamp64Milli(${since}, 'UTC')`);
}

async function accepted(batch: readonly Record<string, unknown>[]): Promise<void> {
  expect((await send(service!, { api_key: KEY, batch })).status).toBe(200);
}

/** Two persons, each with an event, then merged: the anonymous visitor's event is on the person merged away. */
async function mergeAfterEvents(): Promise<string> {
  await accepted([{ event: "anon_event", distinct_id: "s-anon", timestamp: "2024-01-02T00:00:00Z" }]);
  await accepted([{ event: "user_event", distinct_id: "s-user", timestamp: "2024-01-01T00:00:00Z" }]);
  await accepted([{ event: "$identify", distinct_id: "s-user", properties: { $anon_distinct_id: "s-anon" } }]);
  return (await links(service!.db)).get("s-user")!.person_id;
}

test("a squash moves the events of a person merged away to the one it went to: events_resolved reads the same, and joins no override", async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, SQUASH_INTERVAL_S: "0" });
  const survivor = await mergeAfterEvents();
  const everyone = { anon_event: survivor, user_event: survivor, $identify: survivor };
  expect((await personsIn(service, "events")).anon_event).not.toBe(survivor);
  expect(await personsIn(service, "events_resolved")).toEqual(everyone);
  expect(await unsquashed(service)).toBe(2); // the person merged away, and the survivor's own

  const before = Date.now() + 1;
  const squash = await squashOverrides(service.db, before);
  expect(squash).toMatchObject({ before, persons: 1 });
  expect(await squashedBefore(service.db)).toBe(before);
  expect(await personsIn(service, "events")).toEqual(everyone);
  expect(await personsIn(service, "events_resolved")).toEqual(everyone);
  expect(await unsquashed(service)).toBe(0);
  // no override written since, and a time already squashed is not squashed again
  expect(await squashOverrides(service.db, Date.now() + 2)).toBeUndefined();
  expect(await squashOverrides(service.db, before)).toBeUndefined();
  expect(await squashedBefore(service.db)).toBe(before);
});

test("overrides written after the squash's time wait for a later one, and events_resolved still reads them", async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, SQUASH_INTERVAL_S: "0" });
  const early = Date.now();
  const survivor = await mergeAfterEvents();
  expect(await squashOverrides(service.db, early)).toBeUndefined();
  expect((await personsIn(service, "events")).anon_event).not.toBe(survivor);
  expect((await personsIn(service, "events_resolved")).anon_event).toBe(survivor);
  expect(await unsquashed(service)).toBe(2);
});

test("a person the events were squashed to, merged away in turn, takes them along: events_resolved follows, and the next squash moves them", async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, SQUASH_INTERVAL_S: "0" });
  const first = await mergeAfterEvents();
  await squashOverrides(service.db, Date.now() + 1);
  // an older history for another ID, which then identifies as the user: the user's person is merged into it
  await accepted([{ event: "older_event", distinct_id: "s-older", timestamp: "2023-06-01T00:00:00Z" }]);
  await accepted([{ event: "$create_alias", distinct_id: "s-older", properties: { alias: "s-user" } }]);
  const last = (await links(service.db)).get("s-user")!.person_id;
  expect(last).not.toBe(first);
  expect((await personsIn(service, "events")).anon_event).toBe(first);
  const resolved = await personsIn(service, "events_resolved");
  expect(new Set(Object.values(resolved))).toEqual(new Set([last]));

  // both overrides of the component are new: the user's person, and the visitor's (its events already moved)
  expect(await squashOverrides(service.db, Date.now() + 1)).toMatchObject({ persons: 2 });
  expect(await personsIn(service, "events")).toEqual(resolved);
  expect(await personsIn(service, "events_resolved")).toEqual(resolved);
});

test("the service squashes by itself every SQUASH_INTERVAL_S, merges older than SQUASH_GRACE_S", async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, SQUASH_INTERVAL_S: "1", SQUASH_GRACE_S: "0" });
  const survivor = await mergeAfterEvents();
  const deadline = Date.now() + 20_000;
  const squashed = async () =>
    (await personsIn(service!, "events")).anon_event === survivor && (await unsquashed(service!)) === 0;
  while (!(await squashed()) && Date.now() < deadline) await Bun.sleep(200);
  expect((await personsIn(service, "events")).anon_event).toBe(survivor);
  expect(await unsquashed(service)).toBe(0);
});

test("two squashes at once, as two instances run them, move each event once, to the same person", async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, SQUASH_INTERVAL_S: "0" });
  const survivor = await mergeAfterEvents();
  const before = Date.now() + 1;
  const both = await Promise.all([squashOverrides(service.db, before), squashOverrides(service.db, before)]);
  expect(both.map((squash) => squash?.persons)).toEqual([1, 1]);
  expect(await personsIn(service, "events")).toEqual({
    anon_event: survivor,
    user_event: survivor,
    $identify: survivor,
  });
  expect(await count(service.db, "events", `person_id = '${survivor}'`)).toBe(3);
  expect(await unsquashed(service)).toBe(0);
});
