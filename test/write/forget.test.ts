import { expect, test } from "bun:test";
import { personIdFor } from "../../src/identity/person";
import {
  byTable,
  OTHERS_STATE,
  OUR_EVENTS,
  STORY,
  sql,
  storedByTable,
  TRACES,
  type Trace,
  withinTrace,
} from "../helpers/forget";
import { count, persons } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

// `Storage.forget`, as the admin door runs it in the service: the story of test/helpers/forget.ts stored, one of
// the person's IDs forgotten, then the same IDs sending again. The command and its doors: test/cli/forget.test.ts.

const KEY = "key-1";

async function tell(service: TestService, batches: readonly object[][]): Promise<void> {
  for (const batch of batches) expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
}

const traceRows = (service: TestService) => service.db.rows<Trace>(sql(TRACES, service.config.clickhouse.database));
const traces = async (service: TestService) => byTable(await traceRows(service));
const othersState = (service: TestService) =>
  service.db.rows<{ kind: string; key: string; value: string }>(sql(OTHERS_STATE, service.config.clickhouse.database));

test("forgetting one ID removes every trace of its person, merged-in IDs and shared sessions included; others stay", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY, PERSONS_ON_EVENTS: "1" });
  try {
    await tell(service, STORY);
    const rows = await traceRows(service);
    const before = byTable(rows);
    const stored = storedByTable(rows);
    expect(before.events![0]).toBe(OUR_EVENTS);
    for (const table of ["persons", "person_distinct_ids", "identity_facts", "person_overrides", "sessions"]) {
      expect([table, before[table]![0]]).toEqual([table, expect.any(Number)]);
      expect(before[table]![0]).toBeGreaterThan(0);
    }
    const others = await othersState(service);
    // s-shared, the session they share with another person: one key, in one row or more
    expect(await count(service.db, "sessions", "session_id = 's-shared'", { final: true })).toBe(1);
    const sharedStored = await count(service.db, "sessions", "session_id = 's-shared'");

    const outcome = await service.storage.forget(["f-user"]);
    if (!("forgotten" in outcome)) throw new Error(`refused: ${JSON.stringify(outcome)}`);
    const { forgotten } = outcome;
    expect(forgotten).toMatchObject({ persons: 2, distinctIds: 2, sessionsRebuilt: 1 });
    expect(forgotten.removed.events).toBe(OUR_EVENTS);
    // what it counted is the rows stored as it started: background merges may have collapsed some since `before`
    for (const table of ["persons", "person_distinct_ids", "identity_facts", "person_overrides"] as const) {
      const removed = forgotten.removed[table];
      expect([table, withinTrace(removed, before[table]![0], stored[table]!)]).toEqual([table, removed]);
    }
    // s-shared's rows went too, to be made again without their event
    const { sessions } = forgotten.removed;
    expect(withinTrace(sessions, before.sessions![0] + 1, stored.sessions! + sharedStored)).toBe(sessions);

    const after = await traceRows(service);
    for (const [table, theirs] of Object.entries(storedByTable(after))) expect([table, theirs]).toEqual([table, 0]);
    for (const [table, [theirs, total]] of Object.entries(byTable(after))) {
      expect([table, theirs]).toEqual([table, 0]);
      // the others' rows are all there (sessions: s-shared is one row again, made from the other's event alone)
      if (table !== "sessions") expect([table, total]).toEqual([table, before[table]![1] - before[table]![0]]);
    }
    // s-shared now counts the other person's event alone, and starts with it
    const shared = others.map((row) => (row.key === "s-shared" ? { ...row, value: "1 f-other" } : row));
    expect(await othersState(service)).toEqual(shared);
  } finally {
    await service.stop();
  }
});

test("after forgetting, the same IDs make new persons that hold none of the old properties, merges or sessions", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY, PERSONS_ON_EVENTS: "1" });
  try {
    await tell(service, STORY);
    expect(await service.storage.forget(["f-anon"])).toHaveProperty("forgotten");
    await tell(service, [
      [{ event: "$pageview", distinct_id: "f-user", properties: { $session_id: "s-new", $set: { fresh: true } } }],
      // personless: on the person its ID would be born to, the old survivor's id, whose properties it must not get
      [{ event: "anonymous", distinct_id: "f-anon", properties: { $process_person_profile: false } }],
      [{ event: "$pageview", distinct_id: "f-anon" }],
    ]);
    const stored = await persons(service.db);
    // the person ids are derived from the IDs, so they are the old ones: nothing old may come back with them
    const user = stored.get(personIdFor("f-user"));
    const anon = stored.get(personIdFor("f-anon"));
    expect(user).toMatchObject({ distinct_id: "f-user", properties: { fresh: true }, is_identified: 0, is_deleted: 0 });
    expect(anon).toMatchObject({ distinct_id: "f-anon", properties: {}, is_deleted: 0 });
    // each event is on its own ID's new person, and carries that person's properties alone
    const resolved = await service.db.rows<{ distinct_id: string; person: string; props: string }>(
      `SELECT distinct_id, toString(person_id) AS person, person_properties AS props
       FROM ${service.db.table("events_resolved")} WHERE distinct_id IN ('f-user', 'f-anon') ORDER BY distinct_id, event`,
    );
    expect(resolved).toEqual([
      { distinct_id: "f-anon", person: personIdFor("f-anon"), props: "{}" },
      { distinct_id: "f-anon", person: personIdFor("f-anon"), props: "" },
      { distinct_id: "f-user", person: personIdFor("f-user"), props: '{"fresh":true}' },
    ]);
    // no merge of theirs came back (the new persons' ids are the ones merged before), and no session but the new one
    const after = await traces(service);
    expect([after.person_overrides![0], after.sessions![0]]).toEqual([0, 0]);
  } finally {
    await service.stop();
  }
});

test("an ID no person has is refused, and nothing is changed; so is a list with one such ID", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY });
  try {
    await tell(service, STORY);
    const before = await traces(service);
    expect(await service.storage.forget(["nobody"])).toEqual({ unknown: ["nobody"] });
    expect(await service.storage.forget(["f-user", "nobody", "nobody-2"])).toEqual({ unknown: ["nobody", "nobody-2"] });
    expect(await traces(service)).toEqual(before);
  } finally {
    await service.stop();
  }
});

test("an ID whose identity rows are gone but whose events are left (a forget failed part-way) is forgotten again", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY });
  try {
    await tell(service, STORY);
    for (const table of ["person_distinct_ids", "identity_facts"]) {
      await service.db.command(
        `ALTER TABLE ${service.db.table(table)} DELETE WHERE distinct_id IN ('f-user', 'f-anon')`,
        { mutations_sync: 2 },
      );
    }
    const outcome = await service.storage.forget(["f-user"]);
    expect(outcome).toMatchObject({ forgotten: { removed: { events: OUR_EVENTS, identity_facts: 0 } } });
    const after = await traces(service);
    for (const [table, [theirs]] of Object.entries(after)) expect([table, theirs]).toEqual([table, 0]);
  } finally {
    await service.stop();
  }
});

test("a forget while the same ID keeps sending: what was stored before is gone, what came after is a new person's", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY, PERSONS_ON_EVENTS: "1" });
  try {
    await tell(service, STORY);
    let sending = true;
    let sent = 0;
    const traffic = (async () => {
      while (sending) {
        const event = { event: "click", distinct_id: "f-user", properties: { $set: { n: ++sent } } };
        expect((await send(service, { api_key: KEY, batch: [event] })).status).toBe(200);
      }
    })();
    await Bun.sleep(200);
    expect(await service.storage.forget(["f-user"])).toHaveProperty("forgotten");
    await Bun.sleep(200);
    sending = false;
    await traffic;
    // nothing they sent before is anywhere; the clicks after it are one new person's, and carry nothing older
    const secrets = `multiSearchAny(properties, ['secret@example.com', 'Secret Name', 'anon-secret'])`;
    expect(await count(service.db, "persons", secrets)).toBe(0);
    expect(await count(service.db, "events", `${secrets} OR multiSearchAny(person_properties, ['secret'])`)).toBe(0);
    expect(await count(service.db, "identity_facts", "distinct_id = 'f-anon'")).toBe(0);
    const user = (await persons(service.db)).get(personIdFor("f-user"))!;
    expect(Object.keys(user.properties)).toEqual(["n"]);
    expect(user.properties.n).toBe(sent);
    const kept = await service.db.rows<{ person: string; events: number | string }>(
      `SELECT toString(person_id) AS person, count() AS events FROM ${service.db.table("events_resolved")}
       WHERE distinct_id IN ('f-user', 'f-anon') GROUP BY person`,
    );
    expect(kept).toEqual([{ person: personIdFor("f-user"), events: expect.anything() }]);
    expect(Number(kept[0]!.events)).toBeLessThan(sent);
  } finally {
    await service.stop();
  }
});
