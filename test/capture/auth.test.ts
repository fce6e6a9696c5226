import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { count } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const ORIGIN = "https://app.example.com";
let service: TestService;
let browserOnly: TestService;

beforeAll(async () => {
  service = await startService({
    ALLOWED_ORIGINS: `${ORIGIN}, http://localhost:3000`,
    PUBLIC_API_KEYS: "key-1, key-2",
  });
  browserOnly = await startService({ ALLOWED_ORIGINS: ORIGIN });
});
afterAll(async () => {
  await service.stop();
  await browserOnly.stop();
});

const event = (extra: Record<string, unknown> = {}) => ({ event: "signed_up", distinct_id: "user-1", ...extra });
const INVALID_KEY = { status: 401, body: { status: "error", error: "Invalid api_key" } };

describe("backend requests (no Origin)", () => {
  test("a valid key at batch level or at event level is accepted", async () => {
    expect(await send(service, { api_key: "key-1", batch: [event()] })).toMatchObject({ status: 200 });
    expect(await send(service, { batch: [event({ api_key: "key-2" }), event({ api_key: "key-2" })] })).toMatchObject({
      status: 200,
      body: { ingested: 2 },
    });
    expect(await send(service, { api_key: "key-1", batch: [event({ api_key: "key-1" })] })).toMatchObject({
      status: 200,
    });
  });

  test("a missing key is 401", async () => {
    expect(await send(service, { batch: [event()] })).toMatchObject(INVALID_KEY);
    expect(await send(service, { api_key: null, batch: [event()] })).toMatchObject(INVALID_KEY);
  });

  test("an unknown key is 401, and nothing is stored", async () => {
    const before = await count(service.db, "events");
    for (const api_key of ["key-3", "", " key-1", 42, { key: "key-1" }]) {
      expect(await send(service, { api_key, batch: [event()] })).toMatchObject(INVALID_KEY);
    }
    expect(await count(service.db, "events")).toBe(before);
  });

  test("with no PUBLIC_API_KEYS, backend ingest is off: every no-Origin request is 401", async () => {
    expect(await send(browserOnly, { batch: [event()] })).toMatchObject(INVALID_KEY);
    expect(await send(browserOnly, { api_key: "key-1", batch: [event()] })).toMatchObject(INVALID_KEY);
  });
});

describe("browser requests (with Origin)", () => {
  test("an allowed origin needs no key", async () => {
    for (const origin of [ORIGIN, "http://localhost:3000"]) {
      expect(await send(service, { batch: [event()] }, { headers: { origin } })).toMatchObject({ status: 200 });
    }
    expect(await send(browserOnly, { batch: [event()] }, { headers: { origin: ORIGIN } })).toMatchObject({
      status: 200,
    });
  });

  test("a valid key is accepted", async () => {
    expect(await send(service, { api_key: "key-1", batch: [event()] }, { headers: { origin: ORIGIN } })).toMatchObject({
      status: 200,
    });
  });

  test("an invalid key is 401", async () => {
    expect(await send(service, { api_key: "nope", batch: [event()] }, { headers: { origin: ORIGIN } })).toMatchObject(
      INVALID_KEY,
    );
    expect(await send(service, { batch: [event({ api_key: "nope" })] }, { headers: { origin: ORIGIN } })).toMatchObject(
      INVALID_KEY,
    );
    // with no backend keys configured, any key a browser sends is invalid
    expect(
      await send(browserOnly, { api_key: "key-1", batch: [event()] }, { headers: { origin: ORIGIN } }),
    ).toMatchObject(INVALID_KEY);
  });

  test("an origin that does not match exactly is 403, whatever the key", async () => {
    const before = await count(service.db, "events");
    for (const origin of [
      "https://evil.example.com",
      "http://app.example.com",
      `${ORIGIN}/`,
      `${ORIGIN}:443`,
      "HTTPS://APP.EXAMPLE.COM",
      "null",
      "",
    ]) {
      const sent = await send(service, { api_key: "key-1", batch: [event()] }, { headers: { origin } });
      expect(sent).toMatchObject({ status: 403, body: { status: "error", error: "Origin is not allowed" } });
    }
    expect(await count(service.db, "events")).toBe(before);
  });
});

describe("several api_key values in one request", () => {
  const MIXED = {
    status: 400,
    body: { status: "error", error: "Mixed api_key values in one request are not supported" },
  };

  test("batch level and event level differ: 400", async () => {
    expect(await send(service, { api_key: "key-1", batch: [event({ api_key: "key-2" })] })).toMatchObject(MIXED);
  });

  test("two events differ: 400, even when one of them is invalid and even from a browser", async () => {
    expect(await send(service, { batch: [event({ api_key: "key-1" }), event({ api_key: "bad" })] })).toMatchObject(
      MIXED,
    );
    expect(
      await send(
        service,
        { batch: [event({ api_key: "key-1" }), event({ api_key: "key-2" })] },
        { headers: { origin: ORIGIN } },
      ),
    ).toMatchObject(MIXED);
  });

  test("events without a key do not count as a different key", async () => {
    expect(
      await send(service, {
        api_key: "key-1",
        batch: [event(), event({ api_key: "key-1" }), event({ api_key: null })],
      }),
    ).toMatchObject({
      status: 200,
      body: { ingested: 3 },
    });
  });
});
