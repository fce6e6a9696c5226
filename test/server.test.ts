import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { createSchema } from "../src/storage/schema";
import { count } from "./helpers/rows";
import { send, startService, type TestService } from "./helpers/service";

const KEY = "key-1";
let service: TestService;

beforeAll(async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY });
});
afterAll(() => service.stop());

describe("GET /health", () => {
  test("answers ok", async () => {
    const response = await fetch(`${service.url}/health`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("application/json");
    expect(await response.json()).toEqual({ ok: true });
  });

  test("HEAD works too; other methods are 405", async () => {
    expect((await fetch(`${service.url}/health`, { method: "HEAD" })).status).toBe(200);
    const response = await fetch(`${service.url}/health`, { method: "POST" });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET");
    expect(await response.json()).toMatchObject({ status: "error" });
  });
});

describe("routing", () => {
  test("/batch/ and /batch both ingest", async () => {
    const body = { api_key: KEY, batch: [{ event: "e", distinct_id: "u" }] };
    expect(await send(service, body, { path: "/batch/" })).toMatchObject({ status: 200, body: { ingested: 1 } });
    expect(await send(service, body, { path: "/batch" })).toMatchObject({ status: 200, body: { ingested: 1 } });
  });

  test("other methods on /batch/ are 405 with Allow: POST", async () => {
    for (const method of ["GET", "PUT", "DELETE", "PATCH"]) {
      const response = await fetch(`${service.url}/batch/`, { method });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("POST");
      expect(await response.json()).toEqual({ status: "error", error: "Method not allowed. Use POST." });
    }
  });

  test("unknown paths are 404 with an Error object", async () => {
    for (const path of ["/", "/capture/", "/batch/extra", "/health/", "/e/"]) {
      const response = await fetch(`${service.url}${path}`, { method: "POST" });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ status: "error", error: "Not found" });
    }
  });
});

describe("a database write error", () => {
  test("is a 500 Error object, logged; the client's retry then succeeds without duplicates", async () => {
    const body = {
      api_key: KEY,
      batch: [
        {
          event: "will_fail",
          distinct_id: "user-500",
          uuid: "0190b4a1-0000-7000-8000-0000000005a0",
          timestamp: "2024-06-01T00:00:00Z",
        },
      ],
    };
    await service.db.command(`DROP TABLE ${service.db.table("sessions_mv")}`);
    await service.db.command(`DROP TABLE ${service.db.table("events")}`);
    const logged = spyOn(console, "error").mockImplementation(() => {});
    try {
      const sent = await send(service, body);
      expect(sent).toEqual({
        status: 500,
        body: { status: "error", error: "Internal server error" },
        headers: sent.headers,
      });
      expect(logged).toHaveBeenCalled();
      expect(String(logged.mock.calls[0]?.[0])).toContain("POST /batch/");
    } finally {
      logged.mockRestore();
    }

    await createSchema(service.db); // the operator repairs the database; the client retries
    expect(await send(service, body)).toMatchObject({ status: 200, body: { ingested: 1 } });
    expect(await send(service, body)).toMatchObject({ status: 200, body: { ingested: 1 } });
    expect(await count(service.db, "events", "event = 'will_fail'", { final: true })).toBe(1);
  });
});
