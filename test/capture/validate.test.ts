import { describe, expect, test } from "bun:test";
import { acceptEvents, verdictOf } from "../../src/capture/validate";
import { type Case, harness, inProcess, runCases } from "../helpers/cases";

const KEY = "key-1";
const env = { PUBLIC_API_KEYS: KEY, MAX_EVENTS_PER_BATCH: "5" };
const INVALID_PAYLOAD = {
  status: 400,
  code: "invalid_payload",
  error: "Payload must be a JSON object with a non-empty batch array",
} as const;
const events = (count: number) => Array.from({ length: count }, (_, i) => ({ event: "e", distinct_id: `u${i}` }));

const payloads: [string, unknown][] = [
  ["an empty batch", { api_key: KEY, batch: [] }],
  ["no batch", { api_key: KEY }],
  ["batch not an array", { api_key: KEY, batch: { event: "x", distinct_id: "u" } }],
  ["batch a string", { api_key: KEY, batch: "[]" }],
  ["an array", [{ event: "x", distinct_id: "u" }]],
  ["null", null],
  ["a string", "batch"],
  ["a number", 1],
];

const badTimestamps: unknown[] = ["2024-02-30T00:00:00Z", "soon", 1714564800, true, {}];

const cases: Case[] = [
  ...payloads.map(
    ([name, body]): Case => ({ name: `${name} is 400`, env, request: { body }, expect: INVALID_PAYLOAD }),
  ),
  {
    name: "more events than MAX_EVENTS_PER_BATCH is 413 with the count and the maximum",
    env,
    request: { body: { api_key: KEY, batch: events(6) } },
    expect: { status: 413, code: "too_many_events", error: "Batch has 6 events, maximum is 5" },
  },
  {
    name: "exactly MAX_EVENTS_PER_BATCH is accepted",
    env,
    request: { body: { api_key: KEY, batch: events(5) } },
    expect: { status: 200, ingested: 5 },
  },
  {
    name: "events without a name or distinct ID are dropped and counted",
    env,
    request: {
      body: {
        api_key: KEY,
        batch: [
          { event: "kept", distinct_id: "u" },
          { distinct_id: "u" },
          { event: "", distinct_id: "u" },
          { event: 42, distinct_id: "u" },
          { event: "no_distinct_id" },
        ],
      },
    },
    expect: { status: 200, ingested: 1, dropped: 4 },
  },
  {
    name: "items that are not objects are dropped and counted",
    env,
    request: { body: { api_key: KEY, batch: [null, 7, "event", ["event"], { event: "kept", distinct_id: "" }] } },
    expect: { status: 200, ingested: 0, dropped: 5 },
  },
  ...badTimestamps.map(
    (timestamp): Case => ({
      name: `an invalid timestamp ${JSON.stringify(timestamp)} fails the whole request, naming the item`,
      env,
      request: {
        body: {
          api_key: KEY,
          batch: [
            { event: "fine", distinct_id: "u", timestamp: "2024-05-01T00:00:00Z" },
            { event: "bad", distinct_id: "u", timestamp },
          ],
        },
      },
      expect: { status: 400, code: "invalid_timestamp", error: /batch\[1\]/ },
    }),
  ),
  {
    name: "a null timestamp means none",
    env,
    request: { body: { api_key: KEY, batch: [{ event: "e", distinct_id: "u", timestamp: null }] } },
    expect: { status: 200, ingested: 1 },
  },
  {
    name: "the timestamp of an item that is dropped is checked too",
    env,
    request: { body: { api_key: KEY, batch: [{ distinct_id: "u", timestamp: "bad" }] } },
    expect: { status: 400, code: "invalid_timestamp", error: /batch\[0\]/ },
  },
];

/** A JSON value nested `levels` deep (objects and arrays alternating), as raw text. */
const nestedText = (levels: number) =>
  Array.from({ length: levels }, (_, i) => (i % 2 ? "[" : '{"k":')).join("") +
  "1" +
  Array.from({ length: levels }, (_, i) => (i % 2 ? "]" : "}"))
    .reverse()
    .join("");
const withProperties = (properties: string) =>
  `{"api_key":"${KEY}","batch":[{"event":"ok","distinct_id":"u"},{"event":"deep","distinct_id":"u","properties":${properties}}]}`;
const TOO_DEEP = { status: 400, code: "too_deep", error: "Properties of batch[1] nest deeper than 64 levels" } as const;

cases.push(
  {
    name: "properties nested 64 levels are accepted",
    env,
    request: { body: withProperties(nestedText(64)) },
    expect: { status: 200, ingested: 2 },
  },
  {
    name: "properties nested 65 levels fail the request, naming the item",
    env,
    request: { body: withProperties(nestedText(65)) },
    expect: TOO_DEEP,
  },
  {
    name: "$set nested 100,000 deep fails the request before anything is written",
    env,
    request: { body: withProperties(`{"$set":{"a":${nestedText(100_000)}}}`) },
    expect: TOO_DEEP,
  },
  {
    name: "$set_once nested 100,000 deep, beside a number that needs its digits kept",
    env,
    request: { body: withProperties(`{"big":12345678901234567890,"$set_once":{"a":${nestedText(100_000)}}}`) },
    expect: TOO_DEEP,
  },
  {
    name: "an event-level $set nested 100,000 deep fails the request too (it becomes person properties)",
    env,
    request: {
      body: `{"api_key":"${KEY}","batch":[{"event":"ok","distinct_id":"u"},{"event":"deep","distinct_id":"u","$set":${nestedText(100_000)}}]}`,
    },
    expect: TOO_DEEP,
  },
  {
    name: "nesting in ignored event-level fields does not matter",
    env,
    request: {
      body: `{"api_key":"${KEY}","batch":[{"event":"e","distinct_id":"u","extra":${nestedText(100_000)}}]}`,
    },
    expect: { status: 200, ingested: 1 },
  },
);

runCases("the payload", cases);

test("an event name and distinct ID of 5 MB are cut to 200 characters; properties keep the whole value", async () => {
  const { app, sink } = harness(env);
  const long = "x".repeat(5_000_000);
  const body = { api_key: KEY, batch: [{ event: long, distinct_id: long, properties: { long } }] };
  expect((await inProcess.send(app, { body })).status).toBe(200);
  const [event] = sink.events;
  expect([event!.event.length, event!.distinctId.length, (event!.properties.long as string).length]).toEqual([
    200, 200, 5_000_000,
  ]);
});

test("lone surrogates in the event name and distinct IDs become U+FFFD; properties keep them", async () => {
  const { app, sink } = harness(env);
  // escapes in the JSON text, as a client's JSON encoder writes a lone surrogate
  const body = String.raw`{"api_key":"key-1","batch":[{"event":"e\ud800","distinct_id":"x\udfff","properties":{"p":"\ud800"}}]}`;
  expect((await inProcess.send(app, { body })).status).toBe(200);
  const [event] = sink.events;
  expect([event?.event, event?.distinctId, event?.properties.p]).toEqual(["e\ufffd", "x\ufffd", "\ud800"]);
});

test("unknown top-level and event-level fields are ignored; only properties are kept", async () => {
  const { app, sink } = harness(env);
  const body = {
    api_key: KEY,
    historical_migration: true,
    sent_at: "2024-01-01T00:00:00Z",
    whatever: { nested: [1] },
    batch: [{ event: "ignored_fields", distinct_id: "u", type: "capture", library: "x", $set: { a: 1 }, offset: 5 }],
  };
  expect((await inProcess.send(app, { body })).status).toBe(200);
  expect(sink.events.map((event) => event.properties)).toEqual([{}]);
});

describe("acceptEvents", () => {
  const accept = (item: unknown) => acceptEvents([item]).events[0];

  test("distinct ID precedence: distinct_id, then properties.distinct_id, then properties.$distinct_id", () => {
    expect(
      accept({ event: "e", distinct_id: "a", properties: { distinct_id: "b", $distinct_id: "c" } })?.distinctId,
    ).toBe("a");
    expect(accept({ event: "e", properties: { distinct_id: "b", $distinct_id: "c" } })?.distinctId).toBe("b");
    expect(accept({ event: "e", properties: { $distinct_id: "c" } })?.distinctId).toBe("c");
  });

  test("empty strings and non-string values fall through to the next carrier; numbers become strings", () => {
    expect(accept({ event: "e", distinct_id: "", properties: { distinct_id: "b" } })?.distinctId).toBe("b");
    expect(
      accept({ event: "e", distinct_id: null, properties: { distinct_id: "", $distinct_id: "c" } })?.distinctId,
    ).toBe("c");
    expect(accept({ event: "e", distinct_id: { id: 1 }, properties: { $distinct_id: 7 } })?.distinctId).toBe("7");
    expect(accept({ event: "e", distinct_id: 12345 })?.distinctId).toBe("12345");
    expect(accept({ event: "e", distinct_id: 0 })?.distinctId).toBe("0");
    expect(accept({ event: "e", distinct_id: true })).toBeUndefined();
  });

  test("properties that are not an object are treated as none", () => {
    expect(accept({ event: "e", distinct_id: "a", properties: [1, 2] })?.properties).toEqual({});
    expect(accept({ event: "e", distinct_id: "a", properties: "x" })?.properties).toEqual({});
  });

  test("a valid uuid is kept (lower-cased); anything else is dropped for a generated one", () => {
    expect(accept({ event: "e", distinct_id: "a", uuid: "0190B4A1-7C2D-7E3F-8A4B-5C6D7E8F9A0B" })?.uuid).toBe(
      "0190b4a1-7c2d-7e3f-8a4b-5c6d7e8f9a0b",
    );
    for (const uuid of [
      "not-a-uuid",
      42,
      "00000000-0000-0000-0000-000000000000",
      "0190b4a1-7c2d-7e3f-8a4b-5c6d7e8f9a0",
    ]) {
      expect(accept({ event: "e", distinct_id: "a", uuid })?.uuid).toBeUndefined();
    }
  });
});

describe("verdictOf", () => {
  test("each item gets one verdict: accepted, dropped with its reason, or invalid with its reason", () => {
    const deep = JSON.parse(`${"[".repeat(70)}${"]".repeat(70)}`);
    const cases: [unknown, string][] = [
      [{ event: "e", distinct_id: "u" }, "accepted"],
      ["text", "not an event"],
      [[{ event: "e", distinct_id: "u" }], "not an event"],
      [null, "not an event"],
      [{ distinct_id: "u" }, "no event name"],
      [{ event: "", distinct_id: "u" }, "no event name"],
      [{ event: "e" }, "no distinct ID"],
      [{ event: "e", distinct_id: "" }, "no distinct ID"],
      [{ event: "e", distinct_id: "u", timestamp: "yesterday" }, "invalid timestamp"],
      // an item that would be dropped still fails the request for what it sends wrong
      [{ timestamp: 12 }, "invalid timestamp"],
      [{ event: "e", distinct_id: "u", properties: { deep } }, "nested too deep"],
      [{ $set: { deep } }, "nested too deep"],
    ];
    for (const [item, expected] of cases) {
      const verdict = verdictOf(item);
      expect({ item, verdict: verdict.kind === "accepted" ? "accepted" : verdict.reason }).toEqual({
        item,
        verdict: expected,
      });
    }
  });

  test("the API fails a request on its first invalid item, naming it, and counts dropped ones", () => {
    const batch = [{ event: "e", distinct_id: "u" }, "x", { event: "e", distinct_id: "u", timestamp: "no" }];
    expect(() => acceptEvents(batch)).toThrow("Invalid timestamp in batch[2]");
    expect(acceptEvents(batch.slice(0, 2))).toMatchObject({ dropped: 1, events: [{ event: "e", distinctId: "u" }] });
  });
});
