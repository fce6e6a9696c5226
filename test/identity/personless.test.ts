import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { normalize } from "../../src/capture/normalize";
import type { AcceptedEvent } from "../../src/capture/validate";
import type { Timestamp } from "../../src/contract";
import { PERSONLESS, personIdFor } from "../../src/identity/person";
import { count, links, personOf, persons } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";

/** Each event's person as `events_resolved` gives it, by event name. */
async function resolvedPersons(service: TestService, prefix: string): Promise<Record<string, string>> {
  const rows = await service.db.rows<{ event: string; person_id: string }>(
    `SELECT event, toString(person_id) AS person_id FROM ${service.db.table("events_resolved")}
     WHERE startsWith(distinct_id, '${prefix}')`,
  );
  return Object.fromEntries(rows.map((row) => [row.event, row.person_id]));
}

const NO_PROFILE = { $process_person_profile: false };

// Both ways a process resolves: as its database's only writer (embedded), and beside other writers (a server).
describe.each([true, false])("$process_person_profile: false (sole writer: %p)", (soleWriter) => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ PUBLIC_API_KEYS: KEY }, { identity: { soleWriter } });
  });
  afterAll(() => service.stop());
  const capture = async (batch: object[]) => expect((await send(service, { api_key: KEY, batch })).status).toBe(200);

  test("a new ID's event is stored with the person its first profile would make: a link, no person, no $set", async () => {
    await capture([
      { event: "$pageview", distinct_id: "pl-a", properties: { ...NO_PROFILE, $set: { plan: "x" } } },
      { event: "clicked", distinct_id: "pl-a", properties: NO_PROFILE },
    ]);
    const person = personIdFor("pl-a");
    expect(await count(service.db, "events", `distinct_id = 'pl-a' AND person_id = '${person}'`)).toBe(2);
    expect((await links(service.db)).get("pl-a")).toMatchObject({ person_id: person, version: PERSONLESS });
    expect((await persons(service.db)).has(person)).toBe(false);
    expect(await count(service.db, "identity_facts", "distinct_id = 'pl-a'")).toBe(0);
    // the flag is an event property like any other: stored as sent
    const [stored] = await service.db.rows<{ properties: string }>(
      `SELECT properties FROM ${service.db.table("events")} WHERE distinct_id = 'pl-a' AND event = 'clicked'`,
    );
    expect(JSON.parse(stored!.properties)).toEqual(NO_PROFILE);
  });

  test("its first event with a profile makes that person, with that event's updates only", async () => {
    await capture([{ event: "$pageview", distinct_id: "pl-b", properties: { ...NO_PROFILE, $set: { plan: "x" } } }]);
    await capture([{ event: "signed_in", distinct_id: "pl-b", properties: { $set: { plan: "pro" } } }]);
    const person = await personOf(service.db, "pl-b");
    expect(person).toMatchObject({ id: personIdFor("pl-b"), properties: { plan: "pro" }, is_deleted: 0 });
    expect((await links(service.db)).get("pl-b")!.version).toBeGreaterThan(PERSONLESS);
    expect(await resolvedPersons(service, "pl-b")).toEqual({ $pageview: person!.id, signed_in: person!.id });
  });

  test("identified into a known user, its earlier events follow it there (person_overrides)", async () => {
    await capture([{ event: "user_event", distinct_id: "pl-user", timestamp: "2024-01-01T00:00:00Z" }]);
    await capture([{ event: "anon_event", distinct_id: "pl-anon", properties: NO_PROFILE }]);
    await capture([{ event: "$identify", distinct_id: "pl-user", properties: { $anon_distinct_id: "pl-anon" } }]);
    const user = personIdFor("pl-user");
    expect((await links(service.db)).get("pl-anon")!.person_id).toBe(user);
    expect(await resolvedPersons(service, "pl-")).toMatchObject({
      user_event: user,
      anon_event: user,
      $identify: user,
    });
    // the anonymous ID never had a live person: the one it would have had is written merged away
    expect((await persons(service.db)).get(personIdFor("pl-anon"))?.is_deleted).toBe(1);
  });

  test("an ID that has a person keeps it; the personless event changes nothing of it", async () => {
    await capture([{ event: "e", distinct_id: "pl-known", properties: { $set: { plan: "free" } } }]);
    const before = await personOf(service.db, "pl-known");
    await capture([{ event: "e", distinct_id: "pl-known", properties: { ...NO_PROFILE, $set: { plan: "pro" } } }]);
    expect(await personOf(service.db, "pl-known")).toEqual(before);
    expect(await count(service.db, "events", `distinct_id = 'pl-known' AND person_id = '${before!.id}'`)).toBe(2);
  });

  test("$identify and $create_alias link whatever the flag says, and both IDs' events end on one person", async () => {
    await capture([{ event: "first", distinct_id: "pl-x", properties: NO_PROFILE }]);
    await capture([{ event: "second", distinct_id: "pl-y", properties: NO_PROFILE }]);
    await capture([
      { event: "$create_alias", distinct_id: "pl-x", properties: { ...NO_PROFILE, alias: "pl-y", $set: { a: 1 } } },
    ]);
    const x = (await links(service.db)).get("pl-x")!.person_id;
    expect(x).toBe(personIdFor("pl-x")); // the event's own ID's person survives, whichever id sorts first
    expect((await links(service.db)).get("pl-y")!.person_id).toBe(x);
    expect((await persons(service.db)).get(x)).toMatchObject({ properties: { a: 1 }, is_deleted: 0 });
    expect(await resolvedPersons(service, "pl-")).toMatchObject({ first: x, second: x, $create_alias: x });
  });
});

test("PERSONLESS_EVENTS=0: the flag is a property like any other, and the event makes its person", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY, PERSONLESS_EVENTS: "0" });
  try {
    const batch = [{ event: "e", distinct_id: "pl-off", properties: { ...NO_PROFILE, $set: { plan: "x" } } }];
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
    expect(await personOf(service.db, "pl-off")).toMatchObject({
      id: personIdFor("pl-off"),
      properties: { plan: "x" },
    });
  } finally {
    await service.stop();
  }
});

test("only a boolean false is the flag: other values, and linking events, make a profile; $groupidentify and $$heatmap never do", () => {
  const accepted = (event: string, flag: unknown) =>
    ({
      event,
      distinctId: "d",
      properties: { $process_person_profile: flag },
      topLevelSets: {},
    }) as unknown as AcceptedEvent;
  const received = "2026-01-01 00:00:00.000000" as Timestamp;
  const normalized = (event: string, flag: unknown, personlessEvents = true) =>
    normalize(accepted(event, flag), received, {
      correctClockSkew: false,
      sentAt: undefined,
      personlessEvents,
      captureIp: false,
      ip: undefined,
    });
  const personless = (event: string, flag: unknown, personlessEvents = true) =>
    normalized(event, flag, personlessEvents).personless;
  expect(personless("$pageview", false)).toBe(true);
  expect(personless("$pageview", false, false)).toBe(false);
  for (const flag of ["false", 0, null, undefined, true]) expect(personless("$pageview", flag)).toBe(false);
  expect(personless("$groupidentify", undefined)).toBe(true); // about a group: its distinct ID is nobody's
  expect(personless("$groupidentify", undefined, false)).toBe(false);
  expect(personless("$identify", false)).toBe(false);
  expect(personless("$create_alias", false)).toBe(false);
  expect(personless("$merge_dangerously", false)).toBe(false);
  expect(personless("$$heatmap", undefined)).toBe(true); // PostHog keeps it out of person processing
  expect(personless("$$heatmap", undefined, false)).toBe(false);
  // an $exception makes its person, and updates it only if it makes it (PostHog orders exceptions apart)
  expect(normalized("$exception", undefined)).toMatchObject({ personless: false, updatesNewPersonOnly: true });
  expect(normalized("$exception", undefined, false).updatesNewPersonOnly).toBe(false);
  expect(normalized("$pageview", undefined).updatesNewPersonOnly).toBe(false);
});
