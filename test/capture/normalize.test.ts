import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { timestampFromDate } from "../../src/capture/timestamp";
import { personIdFor } from "../../src/identity";
import { events } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";
let service: TestService;

beforeAll(async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY });
});
afterAll(() => service.stop());

async function storedByEvent(name: string) {
  return (await events(service.db)).filter((e) => e.event === name);
}

describe("stored events", () => {
  test("well-known properties get their own columns, and properties are stored as sent", async () => {
    const properties = {
      $session_id: "session-1",
      $window_id: "window-1",
      $current_url: "https://app.example.com/pricing?plan=pro",
      $host: "app.example.com",
      $set: { plan: "pro" },
      nested: { list: [1, "two", null], "key with spaces": true },
      unicode: "héllo ✓ 日本",
    };
    const sent = await send(service, {
      api_key: KEY,
      batch: [{ event: "$pageview", distinct_id: "user-cols", properties, timestamp: "2024-05-01T12:00:00.123456Z" }],
    });
    expect(sent.status).toBe(200);
    const [stored] = await storedByEvent("$pageview");
    expect(stored).toMatchObject({
      event: "$pageview",
      distinct_id: "user-cols",
      person_id: personIdFor("user-cols"),
      session_id: "session-1",
      window_id: "window-1",
      current_url: "https://app.example.com/pricing?plan=pro",
      host: "app.example.com",
      timestamp: "2024-05-01 12:00:00.123456",
    });
    expect(JSON.parse(stored!.properties)).toEqual(properties);
  });

  test("without the well-known properties the columns are empty; numbers are written as text", async () => {
    await send(service, {
      api_key: KEY,
      batch: [
        { event: "plain", distinct_id: "user-plain" },
        { event: "numeric", distinct_id: "user-plain", properties: { $session_id: 17, $host: { not: "text" } } },
      ],
    });
    const [plain] = await storedByEvent("plain");
    expect(plain).toMatchObject({ session_id: "", window_id: "", current_url: "", host: "", properties: "{}" });
    const [numeric] = await storedByEvent("numeric");
    expect(numeric).toMatchObject({ session_id: "17", host: "" });
  });

  test("timestamps are stored in UTC with microseconds; a missing one is the time of ingestion", async () => {
    const before = timestampFromDate(new Date());
    await send(service, {
      api_key: KEY,
      batch: [
        { event: "ts_offset", distinct_id: "user-ts", timestamp: "2024-05-01T12:00:00.987654321+02:00" },
        { event: "ts_missing", distinct_id: "user-ts" },
      ],
    });
    const after = timestampFromDate(new Date());
    const [offset] = await storedByEvent("ts_offset");
    expect(offset!.timestamp).toBe("2024-05-01 10:00:00.987654");
    const [missing] = await storedByEvent("ts_missing");
    expect(missing!.timestamp >= before && missing!.timestamp <= after).toBe(true);
    expect(missing!.created_at).toBe(missing!.timestamp);
  });

  test("a client uuid is the event's id; without one each event gets a fresh v7 uuid", async () => {
    const uuid = "0190b4a1-7c2d-7e3f-8a4b-5c6d7e8f9a0b";
    await send(service, {
      api_key: KEY,
      batch: [
        { event: "with_uuid", distinct_id: "user-uuid", uuid: uuid.toUpperCase() },
        { event: "without_uuid", distinct_id: "user-uuid" },
        { event: "without_uuid", distinct_id: "user-uuid", uuid: "garbage" },
      ],
    });
    expect((await storedByEvent("with_uuid"))[0]!.uuid).toBe(uuid);
    const generated = (await storedByEvent("without_uuid")).map((e) => e.uuid);
    expect(generated).toHaveLength(2);
    expect(new Set(generated).size).toBe(2);
    for (const id of generated)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  test("a retried batch (same uuids) collapses to one copy of each event", async () => {
    const batch = {
      api_key: KEY,
      batch: [
        {
          event: "retried",
          distinct_id: "user-retry",
          uuid: "0190b4a1-0000-7000-8000-000000000001",
          timestamp: "2024-05-02T00:00:00Z",
        },
        {
          event: "retried",
          distinct_id: "user-retry",
          uuid: "0190b4a1-0000-7000-8000-000000000002",
          timestamp: "2024-05-02T00:00:01Z",
        },
      ],
    };
    expect((await send(service, batch)).status).toBe(200);
    expect((await send(service, batch)).status).toBe(200);
    const deduplicated = (await events(service.db, { final: true })).filter((e) => e.event === "retried");
    expect(deduplicated.map((e) => e.uuid)).toEqual([
      "0190b4a1-0000-7000-8000-000000000001",
      "0190b4a1-0000-7000-8000-000000000002",
    ]);
  });
});

describe("hostile values", () => {
  test("lone surrogates in the name and the IDs are stored as U+FFFD, not refused", async () => {
    const body = String.raw`{"api_key":"key-1","batch":[{"event":"surrogate\ud800","distinct_id":"sx\ud800","properties":{"$session_id":"s\udc00","p":"\ud800"}}]}`;
    expect((await send(service, body)).status).toBe(200);
    const [stored] = await storedByEvent("surrogate\ufffd");
    expect(stored).toMatchObject({
      distinct_id: "sx\ufffd",
      session_id: "s\ufffd",
      person_id: personIdFor("sx\ufffd"),
    });
    expect(JSON.parse(stored!.properties)).toEqual({ $session_id: "s\udc00", p: "\ud800" });
  });

  test("numeric distinct IDs keep their digits; properties keep big integers, -0 and huge exponents", async () => {
    const body =
      '{"api_key":"key-1","batch":[' +
      '{"event":"digits","distinct_id":12345678901234567890,"properties":{"n":12345678901234567890,"z":-0,"e":1e400,"f":1.5}},' +
      '{"event":"digits","distinct_id":12345678901234567891},{"event":"digits","distinct_id":1e400}]}';
    expect(await send(service, body)).toMatchObject({ status: 200, body: { ingested: 3 } });
    const stored = await storedByEvent("digits");
    expect(stored.map((e) => [e.distinct_id, e.person_id]).sort()).toEqual(
      [
        ["12345678901234567890", personIdFor("12345678901234567890")],
        ["12345678901234567891", personIdFor("12345678901234567891")],
        ["1e400", personIdFor("1e400")],
      ].sort(),
    );
    const first = stored.find((e) => e.distinct_id === "12345678901234567890")!;
    expect(first.properties).toBe('{"n":12345678901234567890,"z":-0,"e":1e400,"f":1.5}');
  });

  test("long names and IDs are cut to their limits in the columns; properties keep the whole value", async () => {
    const long = "L".repeat(10_000);
    const body = {
      api_key: KEY,
      batch: [{ event: `long-${long}`, distinct_id: long, properties: { $current_url: `https://x/${long}`, long } }],
    };
    expect((await send(service, body)).status).toBe(200);
    const [stored] = (await events(service.db)).filter((e) => e.event.startsWith("long-"));
    expect([stored?.event.length, stored?.distinct_id.length, stored?.current_url.length]).toEqual([200, 200, 8192]);
    expect(JSON.parse(stored!.properties).long).toHaveLength(10_000);
  });
});
