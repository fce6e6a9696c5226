import { describe, expect, spyOn, test } from "bun:test";
import { type Case, harness, runCases, TRANSPORTS } from "./helpers/cases";

const env = { PUBLIC_API_KEYS: "key-1" };
const body = { api_key: "key-1", batch: [{ event: "e", distinct_id: "u" }] };

const cases: Case[] = [
  ...["/batch/", "/batch"].map(
    (path): Case => ({
      name: `POST ${path} ingests`,
      env,
      request: { path, body },
      expect: { status: 200, ingested: 1 },
    }),
  ),
  ...["GET", "PUT", "DELETE", "PATCH"].map(
    (method): Case => ({
      name: `${method} /batch/ is 405 with Allow: POST`,
      env,
      request: { method },
      expect: {
        status: 405,
        code: "method_not_allowed",
        error: "Method not allowed. Use POST.",
        headers: { allow: "POST" },
      },
    }),
  ),
  {
    name: "POST /health is 405 with Allow: GET",
    env,
    request: { path: "/health", body },
    expect: {
      status: 405,
      code: "method_not_allowed",
      error: "Method not allowed. Use GET.",
      headers: { allow: "GET" },
    },
  },
  ...["/", "/capture/", "/batch/extra", "/health/", "/e/"].map(
    (path): Case => ({
      name: `${path} is 404`,
      env,
      request: { path, body },
      expect: { status: 404, code: "not_found", error: "Not found" },
    }),
  ),
];

runCases("routing", cases);

for (const transport of TRANSPORTS) {
  describe(`${transport.name}:`, () => {
    test("GET /health answers ok; HEAD works too", async () => {
      const { app } = harness(env);
      const response = await transport.send(app, { path: "/health", method: "GET" });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toContain("application/json");
      expect(await response.json()).toEqual({ ok: true });
      expect((await transport.send(app, { path: "/health", method: "HEAD" })).status).toBe(200);
    });

    test("a sink that fails is a 500 Error object; the cause is logged, never sent", async () => {
      const { app, sink, failures } = harness(env);
      sink.failure = new Error("secret: disk /var/lib/clickhouse is full");
      const logged = spyOn(console, "error").mockImplementation(() => {});
      try {
        // the default failure handler, as the service runs
        const response = await transport.send({ config: app.config, sink }, { body });
        expect(response.status).toBe(500);
        expect(await response.text()).toBe('{"status":"error","error":"Internal server error"}');
        expect(String(logged.mock.calls[0]?.[0])).toBe("POST /batch/ failed:");
        expect(logged.mock.calls[0]?.[1]).toBe(sink.failure);
      } finally {
        logged.mockRestore();
      }
      await transport.send(app, { body });
      expect(failures.map((failure) => [failure.code, failure.cause])).toEqual([["internal", sink.failure]]);
    });
  });
}
