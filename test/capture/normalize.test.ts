import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { millisOf, timestampFromDate } from "../../src/capture/timestamp";
import type { Timestamp } from "../../src/contract";
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

  test("without a timestamp, `offset` (older SDKs) places the event that many milliseconds before arrival", async () => {
    const before = Date.now();
    await send(service, {
      api_key: KEY,
      batch: [
        { event: "offset_10s", distinct_id: "user-offset", offset: 10_000 },
        {
          event: "offset_and_timestamp",
          distinct_id: "user-offset",
          offset: 10_000,
          timestamp: "2024-05-01T00:00:00Z",
        },
        { event: "offset_not_a_number", distinct_id: "user-offset", offset: "10000" },
        { event: "offset_past_1900", distinct_id: "user-offset", offset: 1e15 },
      ],
    });
    const after = Date.now();
    const at = async (name: string) => millisOf((await storedByEvent(name))[0]!.timestamp as Timestamp);
    const tenBefore = await at("offset_10s");
    expect(tenBefore >= before - 10_000 && tenBefore <= after - 10_000).toBe(true);
    expect((await storedByEvent("offset_and_timestamp"))[0]!.timestamp).toBe("2024-05-01 00:00:00.000000");
    for (const name of ["offset_not_a_number", "offset_past_1900"]) {
      const arrived = await at(name);
      expect({ name, arrival: arrived >= before && arrived <= after }).toEqual({ name, arrival: true });
    }
  });

  test("CORRECT_CLOCK_SKEW=1 moves a timestamp by the client clock's error that sent_at shows; off, as sent", async () => {
    const skewed = await startService({ PUBLIC_API_KEYS: KEY, CORRECT_CLOCK_SKEW: "1" });
    try {
      // the client's clock is a day behind: it says it sent the batch a day before it arrived
      const now = new Date();
      const dayBefore = new Date(now.getTime() - 86_400_000);
      const body = {
        api_key: KEY,
        sent_at: dayBefore.toISOString(),
        batch: [
          { event: "skewed", distinct_id: "user-skew", timestamp: new Date(dayBefore.getTime() - 5_000).toISOString() },
          {
            event: "own_sent_at",
            distinct_id: "user-skew",
            timestamp: "2024-05-01T00:00:00Z",
            sent_at: "2024-05-01T00:00:05Z",
          },
        ],
      };
      for (const target of [skewed, service]) expect((await send(target, body)).status).toBe(200);
      const stored = async (target: TestService, name: string) =>
        millisOf((await events(target.db)).find((e) => e.event === name)!.timestamp as Timestamp);
      // corrected: about five seconds before arrival; as sent: a day earlier
      expect(Math.abs((await stored(skewed, "skewed")) - (now.getTime() - 5_000))).toBeLessThan(2_000);
      expect(Math.abs((await stored(skewed, "own_sent_at")) - (now.getTime() - 5_000))).toBeLessThan(2_000);
      expect(await stored(service, "skewed")).toBe(dayBefore.getTime() - 5_000);
    } finally {
      await skewed.stop();
    }
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
