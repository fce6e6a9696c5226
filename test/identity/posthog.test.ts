import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { literal } from "../../src/storage/sql";
import { count, links, personOf } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

// PostHog's person processing (its plugin-server's person-state and merge services, and their tests), case by case:
// what a few batches sent over HTTP leave in PostHog, which this service must leave too. Where it deliberately does
// otherwise, docs/identity.md says so and why (its "Differences from PostHog").

const KEY = "key-1";

interface SentEvent {
  readonly event: string;
  readonly distinct_id: string;
  readonly properties?: Record<string, unknown>;
  readonly uuid?: string;
}

interface PostHogCase {
  /** What PostHog does. */
  readonly name: string;
  /** Sent one request after another, every event a second after the one before. */
  readonly batches: readonly (readonly SentEvent[])[];
  /** Each list: IDs on one person. */
  readonly together?: readonly (readonly string[])[];
  /** IDs each on a person of its own. */
  readonly apart?: readonly string[];
  /** IDs that have no link at all: no event of theirs, and no link made them one. */
  readonly unlinked?: readonly string[];
  /** The properties of each ID's person but `$creator_event_uuid` (`creators`); `null`: it has none. */
  readonly properties?: Readonly<Record<string, Record<string, unknown> | null>>;
  /** The `$creator_event_uuid` of each ID's person (the table runs with `PERSON_CREATOR_EVENT=1`). */
  readonly creators?: Readonly<Record<string, string>>;
  /** The properties of each group, by `type:key`; `null`: there is none. */
  readonly groups?: Readonly<Record<string, Record<string, unknown> | null>>;
}

const event = (name: string, distinctId: string, properties: Record<string, unknown> = {}, uuid?: string) => ({
  event: name,
  distinct_id: distinctId,
  properties,
  ...(uuid !== undefined && { uuid }),
});

/** Event uuids a case names, to find them as a person's creator. */
const UUID = Array.from({ length: 8 }, () => Bun.randomUUIDv7());

const CASES: readonly PostHogCase[] = [
  {
    name: 'a quoted placeholder ($anon_distinct_id "undefined", quotes and all) links nothing: its users stay apart',
    batches: [
      [
        event("$identify", "pq-user-1", { $anon_distinct_id: '"undefined"' }),
        event("$identify", "pq-user-2", { $anon_distinct_id: '"undefined"' }),
      ],
    ],
    apart: ["pq-user-1", "pq-user-2"],
    unlinked: ['"undefined"'],
  },
  {
    name: "single quotes, and other placeholders quoted, link nothing either",
    batches: [
      [
        event("$identify", "pq-user-3", { $anon_distinct_id: "'null'" }),
        event("$identify", "pq-user-4", { $anon_distinct_id: "'null'" }),
        event("$create_alias", "pq-user-3", { alias: '"[object Object]"' }),
        event("$create_alias", "pq-user-4", { alias: '"[object Object]"' }),
        event("$identify", "pq-user-5", { $anon_distinct_id: '"NaN"' }),
      ],
    ],
    apart: ["pq-user-3", "pq-user-4", "pq-user-5"],
    unlinked: ["'null'", '"[object Object]"', '"NaN"'],
  },
  {
    name: "an $identify sent as a quoted placeholder links nothing: its anonymous ID keeps its own person",
    batches: [[event("$pageview", "pq-anon"), event("$identify", '"anonymous"', { $anon_distinct_id: "pq-anon" })]],
    apart: ["pq-anon", '"anonymous"'],
  },
  {
    name: "a quoted ID that is no placeholder links as any other",
    batches: [[event("$identify", "pq-user-6", { $anon_distinct_id: '"pq-anon-6"' })]],
    together: [["pq-user-6", '"pq-anon-6"']],
  },
  {
    name: "$merge_dangerously merges two identified persons into one, with the properties of both",
    batches: [
      [
        event("$identify", "md-user-1", { $anon_distinct_id: "md-anon-1", $set: { plan: "pro" } }),
        event("$identify", "md-user-2", { $anon_distinct_id: "md-anon-2", $set: { seats: 5 } }),
      ],
      [event("$merge_dangerously", "md-user-1", { alias: "md-user-2" })],
    ],
    together: [["md-user-1", "md-anon-1", "md-user-2", "md-anon-2"]],
    properties: { "md-anon-2": { plan: "pro", seats: 5 } },
  },
  {
    name: "$merge_dangerously of a new ID puts it on the event's person, as $create_alias does",
    batches: [[event("$pageview", "md-user-3")], [event("$merge_dangerously", "md-user-3", { alias: "md-new" })]],
    together: [["md-user-3", "md-new"]],
  },
  {
    name: "$merge_dangerously with a placeholder, or the event's own ID, links nothing",
    batches: [
      [
        event("$merge_dangerously", "md-user-4", { alias: "undefined" }),
        event("$merge_dangerously", "md-user-5", { alias: "undefined" }),
        event("$merge_dangerously", "md-user-6", { alias: "md-user-6" }),
      ],
    ],
    apart: ["md-user-4", "md-user-5", "md-user-6"],
    unlinked: ["undefined"],
  },
  {
    name: "an $exception changes nothing of its person: not its $set, $set_once or $unset, nor where it came from",
    batches: [
      [event("$pageview", "ex-user", { $set: { plan: "free" } })],
      [
        event("$exception", "ex-user", {
          $set: { plan: "pro" },
          $set_once: { first_error: "TypeError" },
          $unset: ["plan"],
          $browser: "Chrome",
          utm_source: "ads",
        }),
      ],
    ],
    properties: { "ex-user": { plan: "free" } },
  },
  {
    name: "an $exception from a new ID makes its person, with what it sets, as any first event",
    batches: [[event("$exception", "ex-new", { $set: { plan: "x" }, $browser: "Firefox" })]],
    properties: { "ex-new": { plan: "x", $browser: "Firefox", $initial_browser: "Firefox" } },
  },
  {
    name: "a $$heatmap makes no person and changes none",
    batches: [
      [event("$$heatmap", "hm-new", { $set: { a: 1 }, $browser: "Chrome" })],
      [event("$pageview", "hm-user", { $set: { a: 1 } })],
      [event("$$heatmap", "hm-user", { $set: { a: 2 }, $set_once: { b: 1 }, utm_source: "ads" })],
    ],
    properties: { "hm-new": null, "hm-user": { a: 1 } },
  },
  {
    name: "a $groupidentify with $process_person_profile: false makes no group, and changes none",
    batches: [
      [
        event("$groupidentify", "$company_gi-off", {
          $process_person_profile: false,
          $group_type: "company",
          $group_key: "gi-off",
          $group_set: { plan: "pro" },
        }),
        event("$groupidentify", "$company_gi-on", {
          $group_type: "company",
          $group_key: "gi-on",
          $group_set: { plan: "free" },
        }),
      ],
      [
        event("$groupidentify", "$company_gi-on", {
          $process_person_profile: false,
          $group_type: "company",
          $group_key: "gi-on",
          $group_set: { plan: "pro", seats: 5 },
        }),
      ],
    ],
    groups: { "company:gi-off": null, "company:gi-on": { plan: "free" } },
  },
  {
    name: "a new person's $creator_event_uuid is the uuid of the event that created it",
    batches: [[event("$pageview", "cr-1", {}, UUID[0])], [event("$pageview", "cr-1", { $set: { a: 1 } }, UUID[1])]],
    properties: { "cr-1": { a: 1 } },
    creators: { "cr-1": UUID[0]! },
  },
  {
    name: "an $identify that makes the person (neither ID had one) is its creator",
    batches: [[event("$identify", "cr-user-2", { $anon_distinct_id: "cr-anon-2" }, UUID[2])]],
    together: [["cr-user-2", "cr-anon-2"]],
    creators: { "cr-anon-2": UUID[2]! },
  },
  {
    name: "an anonymous visitor who identifies as a new user keeps the creator of the visitor's person",
    batches: [
      [event("$pageview", "cr-anon-3", {}, UUID[3])],
      [event("$identify", "cr-user-3", { $anon_distinct_id: "cr-anon-3" }, UUID[4])],
    ],
    creators: { "cr-user-3": UUID[3]! },
  },
  {
    name: "$creator_event_uuid is a property like others: a $set replaces it",
    batches: [
      [event("$pageview", "cr-5", {}, UUID[5])],
      [event("$set", "cr-5", { $set: { $creator_event_uuid: "mine" } })],
    ],
    creators: { "cr-5": "mine" },
  },
];

/** Sends a case's batches, every event a second after the one before; the uuids of its events. */
async function sendCase(service: TestService, batches: PostHogCase["batches"]): Promise<string[]> {
  let second = 0;
  const uuids: string[] = [];
  for (const batch of batches) {
    const stamped = batch.map((sent) => {
      const uuid = sent.uuid ?? Bun.randomUUIDv7();
      uuids.push(uuid);
      return { ...sent, uuid, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, second++)).toISOString() };
    });
    expect((await send(service, { api_key: KEY, batch: stamped })).status).toBe(200);
  }
  return uuids;
}

/** An ID's person's properties without `$creator_event_uuid`, and that apart; `null` for no person. */
async function propertiesOf(service: TestService, id: string) {
  const person = await personOf(service.db, id);
  if (person === undefined) return { properties: null, creator: undefined };
  const { $creator_event_uuid: creator, ...properties } = person.properties;
  return { properties, creator };
}

// As the database's only writer (embedded), and as one of several (a server): the same persons either way.
describe.each([true, false])("PostHog's person processing (sole writer: %p)", (soleWriter) => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ PUBLIC_API_KEYS: KEY, PERSON_CREATOR_EVENT: "1" }, { identity: { soleWriter } });
  });
  afterAll(() => service.stop());

  test.each(CASES.map((c) => [c.name, c] as const))("%s", async (_, c) => {
    const uuids = await sendCase(service, c.batches);
    // every event is stored, whatever it did to persons
    expect(await count(service.db, "events", `toString(uuid) IN ('${uuids.join("','")}')`)).toBe(uuids.length);

    const stored = await links(service.db);
    const personIdOf = (id: string) => stored.get(id)?.person_id;
    for (const ids of c.together ?? []) {
      expect({ ids, persons: new Set(ids.map(personIdOf)).size }).toEqual({ ids, persons: 1 });
      expect(personIdOf(ids[0]!)).toBeDefined();
    }
    const apart = (c.apart ?? []).map(personIdOf);
    expect(apart.every((id) => id !== undefined)).toBe(true);
    expect(new Set(apart).size).toBe(apart.length);
    for (const id of c.unlinked ?? []) expect({ id, link: stored.get(id) }).toEqual({ id, link: undefined });
    for (const [id, properties] of Object.entries(c.properties ?? {})) {
      expect({ id, properties: (await propertiesOf(service, id)).properties }).toEqual({ id, properties });
    }
    for (const [id, creator] of Object.entries(c.creators ?? {})) {
      expect({ id, creator: (await propertiesOf(service, id)).creator }).toEqual({ id, creator });
    }
    for (const [group, properties] of Object.entries(c.groups ?? {})) {
      const [type, key] = group.split(":");
      const [row] = await service.db.rows<{ properties: string }>(
        `SELECT properties FROM ${service.db.table("groups")} FINAL
         WHERE group_type = ${literal(type!)} AND group_key = ${literal(key!)}`,
      );
      expect({ group, properties: row === undefined ? null : JSON.parse(row.properties) }).toEqual({
        group,
        properties,
      });
    }
  });
});

// Where this service deliberately does otherwise (docs/identity.md#differences-from-posthog).
describe("differences from PostHog", () => {
  test("a merge of two persons keeps the creator of the one created first, with its created_at (PostHog: the $identify's person's)", async () => {
    const service = await startService({ PUBLIC_API_KEYS: KEY, PERSON_CREATOR_EVENT: "1" });
    try {
      await sendCase(service, [
        [event("$pageview", "cd-anon", {}, UUID[6])],
        [event("$pageview", "cd-user", {}, UUID[7])],
        [event("$identify", "cd-user", { $anon_distinct_id: "cd-anon" })],
      ]);
      const person = await personOf(service.db, "cd-user");
      expect(person).toMatchObject({ created_at: "2026-01-01 00:00:00.000000", is_deleted: 0 });
      expect(person!.properties.$creator_event_uuid).toBe(UUID[6]);
    } finally {
      await service.stop();
    }
  });

  test("PERSON_CREATOR_EVENT=0, the default: persons hold what events set, and no $creator_event_uuid", async () => {
    const service = await startService({ PUBLIC_API_KEYS: KEY });
    try {
      await sendCase(service, [[event("$pageview", "cd-plain", { $set: { plan: "pro" } })]]);
      expect((await personOf(service.db, "cd-plain"))!.properties).toEqual({ plan: "pro" });
    } finally {
      await service.stop();
    }
  });
});
