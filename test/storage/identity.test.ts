import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { personIdFor } from "../../src/storage/identity";
import { count, events, links, persons } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";
let service: TestService;

beforeAll(async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY });
});
afterAll(() => service.stop());

const capture = (batch: object[]) => send(service, { api_key: KEY, batch });

describe("basic identity rules (SPEC §2.5 rules 1–4)", () => {
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
    await capture([{ event: "two", distinct_id: "carol" }, { event: "three", distinct_id: "carol" }]);
    const personIds = new Set((await events(service.db)).filter((e) => e.distinct_id === "carol").map((e) => e.person_id));
    expect([...personIds]).toEqual([personIdFor("carol")]);
  });

  test("an existing link wins over the derived id", async () => {
    const existing = "11111111-2222-4333-8444-555555555555";
    await service.db.insert("person_distinct_ids", [{ distinct_id: "dave", person_id: existing, is_deleted: 0, version: 1 }]);
    await service.db.insert("persons", [
      { id: existing, distinct_id: "dave", properties: '{"plan":"team"}', is_identified: 1, is_deleted: 0, created_at: "2020-01-01 00:00:00", version: 1 },
    ]);
    await capture([{ event: "e", distinct_id: "dave" }]);
    const stored = (await events(service.db)).find((e) => e.distinct_id === "dave")!;
    expect(stored.person_id).toBe(existing);
    expect((await persons(service.db)).has(personIdFor("dave"))).toBe(false);
    expect((await persons(service.db)).get(existing)?.properties).toEqual({ plan: "team" });
  });

  test("every accepted event writes or refreshes its link, without changing its version", async () => {
    await capture([{ event: "e", distinct_id: "erin" }]);
    const first = (await links(service.db)).get("erin")!;
    await capture([{ event: "e", distinct_id: "erin" }]);
    expect(await count(service.db, "person_distinct_ids", "distinct_id = 'erin'")).toBe(2);
    expect((await links(service.db)).get("erin")).toEqual(first);
  });

  test("a refresh never overrides a newer link written elsewhere", async () => {
    await capture([{ event: "e", distinct_id: "frank" }]); // cached now
    const moved = "99999999-2222-4333-8444-555555555555";
    const { version } = (await links(service.db)).get("frank")!;
    await service.db.insert("person_distinct_ids", [{ distinct_id: "frank", person_id: moved, is_deleted: 0, version: version + 1000 }]);
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
    const [allPersons, allLinks, allEvents] = await Promise.all([persons(service.db), links(service.db), events(service.db)]);
    const these = allEvents.filter((e) => ["gina", "hank", "42"].includes(e.distinct_id));
    expect(these).toHaveLength(4);
    for (const event of these) {
      expect(allPersons.has(event.person_id)).toBe(true);
      expect(allLinks.get(event.distinct_id)?.person_id).toBe(event.person_id);
    }
  });
});
