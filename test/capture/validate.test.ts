import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { acceptEvents } from "../../src/capture/validate";
import { count, events } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";
let service: TestService;

beforeAll(async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, MAX_EVENTS_PER_BATCH: "5" });
});
afterAll(() => service.stop());

const INVALID_PAYLOAD = {
  status: 400,
  body: { status: "error", error: "Payload must be a JSON object with a non-empty batch array" },
};

describe("the payload", () => {
  test.each([
    ["an empty batch", { api_key: KEY, batch: [] }],
    ["no batch", { api_key: KEY }],
    ["batch not an array", { api_key: KEY, batch: { event: "x", distinct_id: "u" } }],
    ["batch a string", { api_key: KEY, batch: "[]" }],
    ["an array", [{ event: "x", distinct_id: "u" }]],
    ["null", null],
    ["a string", "batch"],
    ["a number", 1],
  ])("%s is 400", async (_, payload) => {
    expect(await send(service, payload)).toMatchObject(INVALID_PAYLOAD);
  });

  test("more events than MAX_EVENTS_PER_BATCH is 413 with the count and the maximum", async () => {
    const batch = Array.from({ length: 6 }, (_, i) => ({ event: "e", distinct_id: `u${i}` }));
    expect(await send(service, { api_key: KEY, batch })).toMatchObject({
      status: 413,
      body: { status: "error", error: "Batch has 6 events, maximum is 5" },
    });
    expect(await send(service, { api_key: KEY, batch: batch.slice(0, 5) })).toMatchObject({
      status: 200,
      body: { ingested: 5 },
    });
  });

  test("unknown top-level and event-level fields are ignored", async () => {
    const sent = await send(service, {
      api_key: KEY,
      historical_migration: true,
      sent_at: "2024-01-01T00:00:00Z",
      whatever: { nested: [1] },
      batch: [
        { event: "ignored_fields", distinct_id: "u-ignored", type: "capture", library: "x", $set: { a: 1 }, offset: 5 },
      ],
    });
    expect(sent).toMatchObject({ status: 200, body: { ingested: 1, dropped: 0 } });
    const stored = (await events(service.db)).find((e) => e.event === "ignored_fields")!;
    expect(JSON.parse(stored.properties)).toEqual({});
  });
});

describe("dropped events", () => {
  test("events without a name or a distinct ID, and items that are not objects, are dropped and counted", async () => {
    const before = await count(service.db, "events");
    const sent = await send(service, {
      api_key: KEY,
      batch: [
        { event: "kept", distinct_id: "u-drop" },
        { distinct_id: "u-drop" },
        { event: "", distinct_id: "u-drop" },
        { event: 42, distinct_id: "u-drop" },
        { event: "no_distinct_id" },
      ],
    });
    expect(sent).toMatchObject({ status: 200, body: { status: "ok", ingested: 1, dropped: 4 } });
    const more = await send(service, {
      api_key: KEY,
      batch: [null, 7, "event", ["event"], { event: "kept", distinct_id: "" }],
    });
    expect(more).toMatchObject({ status: 200, body: { ingested: 0, dropped: 5 } });
    expect(await count(service.db, "events")).toBe(before + 1);
  });
});

describe("timestamps", () => {
  test("an invalid timestamp fails the whole request with 400 naming the event, and stores nothing", async () => {
    const before = await count(service.db, "events");
    for (const timestamp of ["2024-02-30T00:00:00Z", "soon", 1714564800, true, {}]) {
      const sent = await send(service, {
        api_key: KEY,
        batch: [
          { event: "fine", distinct_id: "u-ts", timestamp: "2024-05-01T00:00:00Z" },
          { event: "bad", distinct_id: "u-ts", timestamp },
        ],
      });
      expect(sent.status).toBe(400);
      expect(sent.body).toMatchObject({ status: "error" });
      expect(sent.body.error).toContain("batch[1]");
    }
    expect(await count(service.db, "events")).toBe(before);
  });

  test("a null timestamp means none", async () => {
    expect(
      await send(service, { api_key: KEY, batch: [{ event: "e", distinct_id: "u", timestamp: null }] }),
    ).toMatchObject({ status: 200 });
  });

  test("the timestamp of an item that is dropped is checked too", async () => {
    const sent = await send(service, { api_key: KEY, batch: [{ distinct_id: "u", timestamp: "bad" }] });
    expect(sent.status).toBe(400);
  });
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
