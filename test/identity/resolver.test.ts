import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { personIdFor } from "../../src/identity";
import { literal } from "../../src/storage/sql";
import { count, events, links, personOf, persons } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";
let service: TestService;

beforeAll(async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY });
});
afterAll(() => service.stop());

const capture = (batch: object[]) => send(service, { api_key: KEY, batch });

describe("basic identity rules (rules 1–4)", () => {
  test("a new distinct ID gets a deterministic person (UUIDv5), a persons row and a link", async () => {
    expect(personIdFor("alice")).toBe(Bun.randomUUIDv5("alice", "932979b4-65c3-4424-8467-0b66ec27bc22"));
    expect(personIdFor("alice")).not.toBe(personIdFor("bob"));

    await capture([{ event: "e", distinct_id: "alice", timestamp: "2024-01-02T03:04:05Z" }]);
    const person = (await persons(service.db)).get(personIdFor("alice"));
    expect(person).toMatchObject({
      id: personIdFor("alice"),
      distinct_id: "alice",
      properties: {},
      is_identified: 0,
      is_deleted: 0,
      created_at: "2024-01-02 03:04:05.000000",
    });
    expect((await links(service.db)).get("alice")).toMatchObject({ person_id: personIdFor("alice"), is_deleted: 0 });
  });

  test("a distinct ID resolves to the same person across requests", async () => {
    await capture([{ event: "one", distinct_id: "carol" }]);
    await capture([
      { event: "two", distinct_id: "carol" },
      { event: "three", distinct_id: "carol" },
    ]);
    const personIds = new Set(
      (await events(service.db)).filter((e) => e.distinct_id === "carol").map((e) => e.person_id),
    );
    expect([...personIds]).toEqual([personIdFor("carol")]);
  });

  test("an existing link, stored before this process started, wins over the derived id", async () => {
    const existing = "11111111-2222-4333-8444-555555555555";
    await service.db.insert("person_distinct_ids", [
      { distinct_id: "dave", person_id: existing, is_deleted: 0, version: 1 },
    ]);
    await service.db.insert("persons", [
      {
        id: existing,
        distinct_id: "dave",
        properties: '{"plan":"team"}',
        is_identified: 1,
        is_deleted: 0,
        created_at: "2020-01-01 00:00:00",
        version: 1,
      },
    ]);
    const later = await startService({ PUBLIC_API_KEYS: KEY, CLICKHOUSE_DATABASE: service.config.clickhouse.database });
    try {
      expect((await send(later, { api_key: KEY, batch: [{ event: "e", distinct_id: "dave" }] })).status).toBe(200);
    } finally {
      await later.stop({ drop: false });
    }
    const stored = (await events(service.db)).find((e) => e.distinct_id === "dave")!;
    expect(stored.person_id).toBe(existing);
    expect((await persons(service.db)).has(personIdFor("dave"))).toBe(false);
    expect((await persons(service.db)).get(existing)?.properties).toEqual({ plan: "team" });
  });

  test("every accepted event's distinct ID has its link; an unchanged link is not written again", async () => {
    await capture([{ event: "e", distinct_id: "erin" }]);
    const first = (await links(service.db)).get("erin")!;
    await capture([{ event: "e", distinct_id: "erin" }]); // from the cache
    const cold = await startService({ PUBLIC_API_KEYS: KEY, CLICKHOUSE_DATABASE: service.config.clickhouse.database });
    try {
      await send(cold, { api_key: KEY, batch: [{ event: "e", distinct_id: "erin" }] }); // read from ClickHouse
    } finally {
      await cold.stop({ drop: false });
    }
    // the FINAL read is what it was, and no identical rows pile up
    expect((await links(service.db)).get("erin")).toEqual(first);
    expect(await count(service.db, "person_distinct_ids", "distinct_id = 'erin'")).toBe(1);
  });

  test("a refresh never overrides a newer link written elsewhere", async () => {
    await capture([{ event: "e", distinct_id: "frank" }]); // cached now
    const moved = "99999999-2222-4333-8444-555555555555";
    const { version } = (await links(service.db)).get("frank")!;
    await service.db.insert("person_distinct_ids", [
      { distinct_id: "frank", person_id: moved, is_deleted: 0, version: version + 1000 },
    ]);
    await capture([{ event: "e", distinct_id: "frank" }]); // refreshes from a stale cache
    expect((await links(service.db)).get("frank")?.person_id).toBe(moved);
  });

  test("every person an event points to has a persons row; every event's distinct ID has a link", async () => {
    await capture([
      { event: "e", distinct_id: "gina" },
      { event: "e", distinct_id: "hank" },
      { event: "e", distinct_id: "gina" },
      { event: "e", distinct_id: "42" },
    ]);
    const [allPersons, allLinks, allEvents] = await Promise.all([
      persons(service.db),
      links(service.db),
      events(service.db),
    ]);
    const these = allEvents.filter((e) => ["gina", "hank", "42"].includes(e.distinct_id));
    expect(these).toHaveLength(4);
    for (const event of these) {
      expect(allPersons.has(event.person_id)).toBe(true);
      expect(allLinks.get(event.distinct_id)?.person_id).toBe(event.person_id);
    }
  });
});

async function personIdsOf(...distinctIds: string[]): Promise<string[]> {
  const all = await links(service.db);
  return distinctIds.map((id) => all.get(id)?.person_id ?? "none");
}

/** The two events that link IDs, each with the property that names the other ID. */
const LINKING_EVENTS = [
  ["$identify", "$anon_distinct_id"],
  ["$create_alias", "alias"],
] as const;

describe("$identify and $create_alias (rules 5–6)", () => {
  test.each(LINKING_EVENTS)(
    "%s with neither ID known: one new person, with the event's distinct ID's deterministic id",
    async (name, key) => {
      const [user, other] = [`${name}-new-user`, `${name}-new-other`];
      await capture([{ event: name, distinct_id: user, properties: { [key]: other } }]);
      expect(await personIdsOf(user, other)).toEqual([personIdFor(user), personIdFor(user)]);
      expect((await persons(service.db)).has(personIdFor(other))).toBe(false);
    },
  );

  test.each(LINKING_EVENTS)("%s with only the other ID known: the event's ID joins that person", async (name, key) => {
    const [user, other] = [`${name}-join-user`, `${name}-join-other`];
    await capture([{ event: "$pageview", distinct_id: other }]);
    await capture([{ event: name, distinct_id: user, properties: { [key]: other } }]);
    expect(await personIdsOf(user, other)).toEqual([personIdFor(other), personIdFor(other)]);
  });

  test.each(LINKING_EVENTS)("%s with only the event's ID known: the other ID joins it", async (name, key) => {
    const [user, other] = [`${name}-known-user`, `${name}-known-other`];
    await capture([{ event: "$pageview", distinct_id: user }]);
    await capture([{ event: name, distinct_id: user, properties: { [key]: other } }]);
    expect(await personIdsOf(user, other)).toEqual([personIdFor(user), personIdFor(user)]);
  });

  test.each(LINKING_EVENTS)(
    "%s with both known on different persons merges the other person into the event's",
    async (name, key) => {
      const [user, other, otherAlias] = [`${name}-m-user`, `${name}-m-other`, `${name}-m-other-alias`];
      await capture([
        { event: "$pageview", distinct_id: user, properties: { $set: { plan: "pro", shared: "user" } } },
        { event: "$pageview", distinct_id: other, properties: { $set: { shared: "other", referrer: "ad" } } },
        { event: "$create_alias", distinct_id: other, properties: { alias: otherAlias } },
      ]);
      expect(await personIdsOf(otherAlias)).toEqual([personIdFor(other)]);

      await capture([{ event: name, distinct_id: user, properties: { [key]: other, $set: { shared: "event" } } }]);
      // every distinct ID of the merged person moved, including ones the event did not name
      expect(await personIdsOf(user, other, otherAlias)).toEqual([
        personIdFor(user),
        personIdFor(user),
        personIdFor(user),
      ]);
      const all = await persons(service.db);
      // the survivor's values win conflicts, then the event's updates apply
      expect(all.get(personIdFor(user))).toMatchObject({
        is_deleted: 0,
        properties: { plan: "pro", referrer: "ad", shared: "event" },
      });
      expect(all.get(personIdFor(other))).toMatchObject({ is_deleted: 1 });
    },
  );

  test("both IDs already on one person: nothing changes", async () => {
    await capture([{ event: "$identify", distinct_id: "same-user", properties: { $anon_distinct_id: "same-anon" } }]);
    const before = await links(service.db);
    await capture([{ event: "$create_alias", distinct_id: "same-anon", properties: { alias: "same-user" } }]);
    const after = await links(service.db);
    expect(after.get("same-user")).toEqual(before.get("same-user")!);
    expect(after.get("same-anon")).toEqual(before.get("same-anon")!);
  });

  test.each([
    "anonymous",
    "Anonymous",
    "null",
    "undefined",
    "None",
    "nan",
    "0",
    "[object Object]",
    "   ",
    "placeholder-user",
  ])(
    "a placeholder (%p) or an ID equal to the other links nothing, and the event is still stored",
    async (placeholder) => {
      const user = `ph-user-${placeholder.trim() || "blank"}`;
      const anon = placeholder === "placeholder-user" ? user : placeholder;
      const sent = await capture([
        { event: "$pageview", distinct_id: user },
        { event: "$identify", distinct_id: user, properties: { $anon_distinct_id: anon } },
        { event: "$create_alias", distinct_id: user, properties: { alias: anon } },
      ]);
      expect(sent.body).toMatchObject({ ingested: 3, dropped: 0 });
      expect(await personIdsOf(user)).toEqual([personIdFor(user)]);
      if (anon !== user) expect((await links(service.db)).has(anon)).toBe(false);
      expect((await events(service.db)).filter((e) => e.distinct_id === user)).toHaveLength(3);
    },
  );

  test("an event whose own distinct ID is a placeholder does not link either", async () => {
    await capture([{ event: "$identify", distinct_id: "anonymous", properties: { $anon_distinct_id: "real-anon-1" } }]);
    expect(await personIdsOf("anonymous")).toEqual([personIdFor("anonymous")]);
    expect((await links(service.db)).has("real-anon-1")).toBe(false);
  });

  test("within a batch each event gets the person its distinct ID resolves to at that point", async () => {
    await capture([
      { event: "$pageview", distinct_id: "b-anon", uuid: "0190b4a1-0000-7000-8000-0000000000b1" },
      {
        event: "$identify",
        distinct_id: "b-user",
        properties: { $anon_distinct_id: "b-anon" },
        uuid: "0190b4a1-0000-7000-8000-0000000000b2",
      },
      { event: "$pageview", distinct_id: "b-user", uuid: "0190b4a1-0000-7000-8000-0000000000b3" },
    ]);
    const stored = (await events(service.db)).filter((e) => e.uuid.startsWith("0190b4a1-0000-7000-8000-0000000000b"));
    expect(stored.map((e) => e.person_id)).toEqual([
      personIdFor("b-anon"),
      personIdFor("b-anon"),
      personIdFor("b-anon"),
    ]);
  });

  test("a merge keeps the person born first; every event of the flush gets the person its ID has after it", async () => {
    await capture([
      { event: "$pageview", distinct_id: "t-user", uuid: "0190b4a1-0000-7000-8000-0000000000c1" },
      { event: "$pageview", distinct_id: "t-anon", uuid: "0190b4a1-0000-7000-8000-0000000000c2" },
      {
        event: "$identify",
        distinct_id: "t-anon",
        properties: { $anon_distinct_id: "t-user" },
        uuid: "0190b4a1-0000-7000-8000-0000000000c3",
      },
      { event: "$pageview", distinct_id: "t-anon", uuid: "0190b4a1-0000-7000-8000-0000000000c4" },
    ]);
    const stored = (await events(service.db)).filter((e) => e.uuid.startsWith("0190b4a1-0000-7000-8000-0000000000c"));
    // no timestamps: all four happened when the request arrived, and t-user's person was created first
    expect(stored.map((e) => e.person_id)).toEqual(Array(4).fill(personIdFor("t-user")));
    expect((await persons(service.db)).get(personIdFor("t-anon"))?.is_deleted).toBe(1);
  });

  test("the earlier timestamp wins a merge, whichever person the events reached first", async () => {
    await capture([
      { event: "$pageview", distinct_id: "ts-late", timestamp: "2026-03-01T00:00:00Z" },
      { event: "$pageview", distinct_id: "ts-early", timestamp: "2026-02-01T00:00:00Z" },
    ]);
    await capture([{ event: "$identify", distinct_id: "ts-late", properties: { $anon_distinct_id: "ts-early" } }]);
    expect(await personIdsOf("ts-late", "ts-early")).toEqual([personIdFor("ts-early"), personIdFor("ts-early")]);
    expect(await personOf(service.db, "ts-late")).toMatchObject({
      distinct_id: "ts-late",
      is_identified: 1,
      created_at: "2026-02-01 00:00:00.000000",
    });
  });
});

describe("person properties (rule 7)", () => {
  test("$set, $set_once and $unset from any event, applied in batch order and across requests", async () => {
    await capture([
      {
        event: "signed_up",
        distinct_id: "props-user",
        properties: { $set: { plan: "free", seats: 1 }, $set_once: { first_seen: "mon" } },
      },
      {
        event: "upgraded",
        distinct_id: "props-user",
        properties: { $set: { plan: "pro" }, $set_once: { first_seen: "tue", source: "ad" } },
      },
      { event: "cleaned", distinct_id: "props-user", properties: { $unset: ["seats"] } },
    ]);
    expect((await personOf(service.db, "props-user"))?.properties).toEqual({
      plan: "pro",
      first_seen: "mon",
      source: "ad",
    });
    await capture([
      {
        event: "later",
        distinct_id: "props-user",
        properties: { $set: { plan: "team" }, $set_once: { plan: "x", seats: 5 } },
      },
    ]);
    expect((await personOf(service.db, "props-user"))?.properties).toEqual({
      plan: "team",
      first_seen: "mon",
      source: "ad",
      seats: 5,
    });
  });

  test("after an $unset, the first $set_once after it wins, whichever came first, across persons that merge", async () => {
    const at = (second: number) => `2026-02-01T00:00:0${second}Z`;
    await capture([
      { event: "e", distinct_id: "once-user", properties: { $set_once: { plan: "second" } }, timestamp: at(6) },
    ]);
    await capture([
      { event: "e", distinct_id: "once-anon", properties: { $set_once: { plan: "first" } }, timestamp: at(4) },
    ]);
    await capture([{ event: "e", distinct_id: "once-user", properties: { $unset: ["plan"] }, timestamp: at(2) }]);
    expect((await personOf(service.db, "once-user"))?.properties).toEqual({ plan: "second" });
    // the merge brings the anonymous ID's earlier $set_once, which now comes first after the $unset
    await capture([
      {
        event: "$identify",
        distinct_id: "once-user",
        properties: { $anon_distinct_id: "once-anon" },
        timestamp: at(8),
      },
    ]);
    expect((await personOf(service.db, "once-user"))?.properties).toEqual({ plan: "first" });
    // a later $set_once changes nothing; a $set does
    await capture([
      { event: "e", distinct_id: "once-anon", properties: { $set_once: { plan: "third" } }, timestamp: at(9) },
    ]);
    expect((await personOf(service.db, "once-user"))?.properties).toEqual({ plan: "first" });
  });

  test("$identify marks the person identified; the primary ID is the identified one, else the first seen", async () => {
    await capture([{ event: "$pageview", distinct_id: "primary-anon" }]);
    expect(await personOf(service.db, "primary-anon")).toMatchObject({ distinct_id: "primary-anon", is_identified: 0 });
    await capture([
      { event: "$identify", distinct_id: "primary-user", properties: { $anon_distinct_id: "primary-anon" } },
    ]);
    expect(await personOf(service.db, "primary-anon")).toMatchObject({
      id: personIdFor("primary-anon"),
      distinct_id: "primary-user",
      is_identified: 1,
    });
    // a later identify under another ID keeps the first identified ID as primary
    await capture([
      { event: "$identify", distinct_id: "primary-user-2", properties: { $anon_distinct_id: "primary-user" } },
    ]);
    expect(await personOf(service.db, "primary-user-2")).toMatchObject({
      distinct_id: "primary-user",
      is_identified: 1,
    });
  });

  test("$create_alias does not identify; a merge keeps an identified primary ID", async () => {
    await capture([
      { event: "$identify", distinct_id: "alias-known" },
      { event: "$pageview", distinct_id: "alias-anon" },
      { event: "$create_alias", distinct_id: "alias-anon", properties: { alias: "alias-known" } },
    ]);
    // alias-known's person was created first, so it survives the merge
    expect(await personOf(service.db, "alias-known")).toMatchObject({
      id: personIdFor("alias-known"),
      distinct_id: "alias-known",
      is_identified: 1,
    });
  });
});

describe("versions", () => {
  test("every change of a person or a link gets a higher version", async () => {
    await capture([
      { event: "$pageview", distinct_id: "v-user" },
      { event: "$pageview", distinct_id: "v-anon" },
    ]);
    const link1 = (await links(service.db)).get("v-anon")!;
    const person1 = (await persons(service.db)).get(personIdFor("v-user"))!;
    await capture([
      { event: "$identify", distinct_id: "v-user", properties: { $anon_distinct_id: "v-anon", $set: { a: 1 } } },
    ]);
    const link2 = (await links(service.db)).get("v-anon")!;
    const person2 = (await persons(service.db)).get(personIdFor("v-user"))!;
    expect(link2.version).toBeGreaterThan(link1.version);
    expect(person2.version).toBeGreaterThan(person1.version);
    await capture([{ event: "e", distinct_id: "v-user", properties: { $set: { a: 2 } } }]);
    expect((await persons(service.db)).get(personIdFor("v-user"))!.version).toBeGreaterThan(person2.version);
    // argMax(..., version) agrees with FINAL
    const [latest] = await service.db.rows<{ properties: string }>(
      `SELECT argMax(properties, version) AS properties FROM ${service.db.table("persons")} WHERE id = ${literal(personIdFor("v-user"))}`,
    );
    expect(JSON.parse(latest!.properties)).toEqual({ a: 2 });
  });

  test("an event that changes no person writes no fact and no person; a repeated update writes a version", async () => {
    await capture([{ event: "e", distinct_id: "quiet", properties: { $set: { a: 1 } } }]);
    const rows = () => count(service.db, "persons", `id = '${personIdFor("quiet")}'`);
    const facts = () => count(service.db, "identity_facts", "distinct_id = 'quiet'");
    const [personsBefore, factsBefore] = [await rows(), await facts()];
    await capture([{ event: "e", distinct_id: "quiet" }]);
    expect([await rows(), await facts()]).toEqual([personsBefore, factsBefore]);
    // the same $set again is a fact like any other: its person's version counts it, its properties do not change
    await capture([{ event: "e", distinct_id: "quiet", properties: { $set: { a: 1 } } }]);
    expect(await rows()).toBe(personsBefore + 1);
    expect((await personOf(service.db, "quiet"))?.properties).toEqual({ a: 1 });
  });
});

describe("under concurrency", () => {
  test("concurrent requests linking to one user never split it or lose an update", async () => {
    await capture([{ event: "$identify", distinct_id: "c-user" }]);
    const requests = Array.from({ length: 24 }, (_, i) =>
      capture([
        { event: "$pageview", distinct_id: `c-anon-${i}`, properties: { $set_once: { [`first_${i}`]: i } } },
        {
          event: "$identify",
          distinct_id: "c-user",
          properties: { $anon_distinct_id: `c-anon-${i}`, $set: { [`key_${i}`]: i } },
        },
      ]),
    );
    for (const sent of await Promise.all(requests)) expect(sent.status).toBe(200);

    const ids = ["c-user", ...Array.from({ length: 24 }, (_, i) => `c-anon-${i}`)];
    expect(new Set(await personIdsOf(...ids))).toEqual(new Set([personIdFor("c-user")]));
    const user = (await persons(service.db)).get(personIdFor("c-user"))!;
    for (let i = 0; i < 24; i++) expect(user.properties).toMatchObject({ [`first_${i}`]: i, [`key_${i}`]: i });
    const live = [...(await persons(service.db)).values()].filter(
      (p) => ids.some((id) => personIdFor(id) === p.id) && p.is_deleted === 0,
    );
    expect(live.map((p) => p.id)).toEqual([personIdFor("c-user")]);
  });

  test("concurrent first sightings of one new ID make one person with every update", async () => {
    const requests = Array.from({ length: 16 }, (_, i) =>
      capture([{ event: "e", distinct_id: "c-new", properties: { $set: { [`r${i}`]: i } } }]),
    );
    await Promise.all(requests);
    const person = await personOf(service.db, "c-new");
    expect(person?.id).toBe(personIdFor("c-new"));
    expect(Object.keys(person!.properties).sort()).toEqual(Array.from({ length: 16 }, (_, i) => `r${i}`).sort());
  });
});

describe("after a failed write", () => {
  test("nothing in memory claims it happened, and the retry completes it", async () => {
    await capture([
      { event: "$pageview", distinct_id: "f-user" },
      { event: "$pageview", distinct_id: "f-anon" },
    ]);
    // The database refuses person writes (reads still work) while the identify is processed.
    await service.db.command(`ALTER TABLE ${service.db.table("persons")} ADD CONSTRAINT refuse CHECK version = 0`);
    const identify = { event: "$identify", distinct_id: "f-user", properties: { $anon_distinct_id: "f-anon" } };
    const logged = spyOn(console, "error").mockImplementation(() => {});
    try {
      expect((await capture([identify])).status).toBe(503); // a table an operator must fix
    } finally {
      logged.mockRestore();
      await service.db.command(`ALTER TABLE ${service.db.table("persons")} DROP CONSTRAINT refuse`);
    }
    // Served from the cache where possible: f-anon must still be on its own person.
    await capture([{ event: "after_failure", distinct_id: "f-anon" }]);
    const after = (await events(service.db)).find((e) => e.event === "after_failure")!;
    expect(after.person_id).toBe(personIdFor("f-anon"));

    expect((await capture([identify])).status).toBe(200);
    expect(await personIdsOf("f-user", "f-anon")).toEqual([personIdFor("f-user"), personIdFor("f-user")]);
    expect((await persons(service.db)).get(personIdFor("f-anon"))?.is_deleted).toBe(1);
  });
});

describe("persons stored without facts, as 0.1.0 wrote them", () => {
  test("a person of one distinct ID keeps its properties and birth when updated, and a merge moves its events", async () => {
    // 0.1.0 wrote persons and links and no facts; these two persons have one distinct ID each
    const person = (distinctId: string, id: string, properties: object, createdAt: string) => ({
      id,
      distinct_id: distinctId,
      properties: JSON.stringify(properties),
      is_identified: 1,
      is_deleted: 0,
      created_at: createdAt,
      version: 1,
    });
    const [frank, grace] = ["11111111-2222-4333-8444-000000000001", "11111111-2222-4333-8444-000000000002"];
    await service.db.insert("persons", [
      person("legacy-frank", frank, { plan: "team" }, "2020-01-01 00:00:00"),
      person("legacy-grace", grace, { email: "g@example.com" }, "2021-01-01 00:00:00"),
    ]);
    await service.db.insert("person_distinct_ids", [
      { distinct_id: "legacy-frank", person_id: frank, is_deleted: 0, version: 1 },
      { distinct_id: "legacy-grace", person_id: grace, is_deleted: 0, version: 1 },
    ]);
    // a service started on them, as on 0.1.0's data directory
    const later = await startService({ PUBLIC_API_KEYS: KEY, CLICKHOUSE_DATABASE: service.config.clickhouse.database });
    try {
      const sendLater = (batch: object[]) => send(later, { api_key: KEY, batch });
      expect(
        (await sendLater([{ event: "e", distinct_id: "legacy-grace", timestamp: "2022-01-01T00:00:00Z" }])).status,
      ).toBe(200);
      expect(
        (await sendLater([{ event: "e", distinct_id: "legacy-frank", properties: { $set: { seats: 3 } } }])).status,
      ).toBe(200);
      expect((await persons(service.db)).get(frank)).toMatchObject({
        properties: { plan: "team", seats: 3 },
        created_at: "2020-01-01 00:00:00.000000",
        is_deleted: 0,
      });
      // grace's person, born later, goes into frank's: its link, its properties, and its events by an override
      const identify = {
        event: "$identify",
        distinct_id: "legacy-frank",
        properties: { $anon_distinct_id: "legacy-grace" },
      };
      expect((await sendLater([identify])).status).toBe(200);
    } finally {
      await later.stop({ drop: false });
    }
    expect((await links(service.db)).get("legacy-grace")?.person_id).toBe(frank);
    expect((await persons(service.db)).get(frank)?.properties).toEqual({
      plan: "team",
      seats: 3,
      email: "g@example.com",
    });
    expect((await persons(service.db)).get(grace)?.is_deleted).toBe(1);
    const [resolved] = await service.db.rows<{ person: string }>(
      `SELECT toString(person_id) AS person FROM ${service.db.table("events_resolved")} WHERE distinct_id = 'legacy-grace'`,
    );
    expect(resolved?.person).toBe(frank);
  });
});

describe("a person left behind by a failed write", () => {
  test("a new ID whose person was stored without its link gets its person again, at a newer version", async () => {
    // What a write that stored persons but failed before links leaves: a person, no link, nothing acknowledged.
    const id = personIdFor("left-behind");
    await service.db.insert("persons", [
      {
        id,
        distinct_id: "left-behind",
        properties: '{"unacknowledged":true}',
        is_identified: 0,
        is_deleted: 0,
        created_at: "2020-01-01 00:00:00",
        version: Date.now() * 1000,
      },
    ]);
    expect((await capture([{ event: "e", distinct_id: "left-behind" }])).status).toBe(200);
    expect((await events(service.db)).find((e) => e.distinct_id === "left-behind")?.person_id).toBe(id);
    expect((await links(service.db)).get("left-behind")).toMatchObject({ person_id: id, is_deleted: 0 });
    expect((await persons(service.db)).get(id)).toMatchObject({ is_deleted: 0, properties: {} });
    expect((await capture([{ event: "e", distinct_id: "left-behind", properties: { $set: { a: 1 } } }])).status).toBe(
      200,
    );
    expect((await persons(service.db)).get(id)?.properties).toEqual({ a: 1 });
  });
});

describe("hostile IDs", () => {
  test("an $anon_distinct_id with a lone surrogate links, and stays linked once the cache has expired", async () => {
    const short = await startService(
      { PUBLIC_API_KEYS: KEY, LINK_CACHE_TTL_MS: "50", LINK_CACHE_ENTRIES: "100" },
      { identity: { soleWriter: false } },
    );
    try {
      // escapes in the JSON text: the anonymous ID arrives with two different lone surrogates, both U+FFFD
      const body = (event: string, fields: string) => `{"api_key":"${KEY}","batch":[{"event":"${event}",${fields}}]}`;
      expect((await send(short, body("$pageview", String.raw`"distinct_id":"anon\ud800"`))).status).toBe(200);
      const identify = String.raw`"distinct_id":"known","properties":{"$anon_distinct_id":"anon\ud800"}`;
      expect((await send(short, body("$identify", identify))).status).toBe(200);
      await Bun.sleep(100);
      expect((await send(short, body("later", String.raw`"distinct_id":"anon\udbff"`))).status).toBe(200);
      const later = (await events(short.db)).find((e) => e.event === "later")!;
      expect(later.distinct_id).toBe("anon\ufffd");
      // anon was seen first, so known joined anon's person; both still resolve to it after the cache expired
      const stored = await links(short.db);
      expect(later.person_id).toBe(personIdFor("anon\ufffd"));
      expect([stored.get("anon\ufffd")?.person_id, stored.get("known")?.person_id]).toEqual([
        later.person_id,
        later.person_id,
      ]);
    } finally {
      await short.stop();
    }
  });
});

describe("event-level $set and $set_once (as posthog-python, -go, -ruby, -php and -js send them)", () => {
  test("update the person, merged over the ones in properties with the event level winning; properties stay as sent", async () => {
    await capture([
      {
        event: "$identify",
        distinct_id: "level-user",
        $set: { plan: "pro", email: "a@example.com" },
        $set_once: { first_seen: "event-level" },
        properties: { $set: { plan: "free", seats: 3 }, $set_once: { first_seen: "inside", source: "ad" } },
      },
      { event: "$set", distinct_id: "level-user", $set: "not an object", $set_once: [1, 2] },
    ]);
    const person = await personOf(service.db, "level-user");
    expect(person?.properties).toEqual({
      plan: "pro",
      email: "a@example.com",
      seats: 3,
      first_seen: "event-level",
      source: "ad",
    });
    const [stored] = (await events(service.db)).filter(
      (e) => e.distinct_id === "level-user" && e.event === "$identify",
    );
    expect(JSON.parse(stored!.properties)).toEqual({
      $set: { plan: "free", seats: 3 },
      $set_once: { first_seen: "inside", source: "ad" },
    });
  });
});
