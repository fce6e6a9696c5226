import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { count } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

// The documented order of checks: compression parameter, Content-Type, Content-Encoding, Origin, body size,
// gzip, JSON, payload shape, event count, api_key (mixed, then valid), timestamps, then the write.
const ORIGIN = "https://app.example.com";
const KEY = "key-1";
let service: TestService;

beforeAll(async () => {
  service = await startService({
    ALLOWED_ORIGINS: ORIGIN,
    PUBLIC_API_KEYS: KEY,
    MAX_EVENTS_PER_BATCH: "2",
    MAX_BATCH_BYTES: "2048",
  });
});
afterAll(() => service.stop());

const ok = { api_key: KEY, batch: [{ event: "e", distinct_id: "u" }] };

describe("order of checks: the earlier failure wins", () => {
  test("compression parameter before Content-Type", async () => {
    const sent = await send(service, ok, {
      path: "/batch/?compression=gzip-js",
      headers: { "content-type": "text/plain" },
    });
    expect(sent.status).toBe(415);
    expect(sent.body.error).toContain("compression");
  });

  test("Content-Type before Content-Encoding", async () => {
    const sent = await send(service, ok, { headers: { "content-type": "text/plain", "content-encoding": "br" } });
    expect(sent.body.error).toBe("Unsupported content type. Use application/json.");
  });

  test("Content-Encoding before Origin", async () => {
    const sent = await send(service, ok, { headers: { "content-encoding": "br", origin: "https://evil.example.com" } });
    expect(sent).toMatchObject({ status: 415, body: { error: "Unsupported content-encoding: br" } });
  });

  test("Origin before body size", async () => {
    const sent = await send(service, "x".repeat(4096), { headers: { origin: "https://evil.example.com" } });
    expect(sent.status).toBe(403);
  });

  test("body size before JSON", async () => {
    expect((await send(service, "x".repeat(4096))).status).toBe(413);
  });

  test("payload shape before the api_key", async () => {
    expect(await send(service, { api_key: "wrong", batch: [] })).toMatchObject({ status: 400 });
  });

  test("event count before the api_key", async () => {
    const batch = [1, 2, 3].map((i) => ({ event: "e", distinct_id: `u${i}` }));
    expect(await send(service, { api_key: "wrong", batch })).toMatchObject({
      status: 413,
      body: { error: "Batch has 3 events, maximum is 2" },
    });
  });

  test("mixed keys before invalid keys", async () => {
    const sent = await send(service, {
      api_key: "wrong",
      batch: [{ event: "e", distinct_id: "u", api_key: "also-wrong" }],
    });
    expect(sent.status).toBe(400);
  });

  test("the api_key before timestamps", async () => {
    const sent = await send(service, { api_key: "wrong", batch: [{ event: "e", distinct_id: "u", timestamp: "bad" }] });
    expect(sent.status).toBe(401);
  });

  test("nothing that failed a check was stored", async () => {
    expect(await count(service.db, "events")).toBe(0);
    expect(await count(service.db, "persons")).toBe(0);
    expect(await count(service.db, "person_distinct_ids")).toBe(0);
  });
});

test("a success answers ok with what was ingested and dropped", async () => {
  const sent = await send(service, { api_key: KEY, batch: [{ event: "e", distinct_id: "u" }, { event: "e" }] });
  expect(sent).toMatchObject({ status: 200, body: { status: "ok", ingested: 1, dropped: 1 } });
  expect(sent.headers.get("content-type")).toContain("application/json");
  expect(await count(service.db, "events")).toBe(1);
});
