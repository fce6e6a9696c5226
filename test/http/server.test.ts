import { describe, expect, spyOn, test } from "bun:test";
import { serve } from "../../src/http/server";
import { type Case, harness, runCases, TRANSPORTS } from "../helpers/cases";
import { parseResponses, rawExchange } from "../helpers/raw-http";

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
      name: `${method} /batch/ is 405 with Allow: POST, OPTIONS`,
      env,
      request: { method },
      expect: {
        status: 405,
        code: "method_not_allowed",
        error: "Method not allowed. Use POST, OPTIONS.",
        headers: { allow: "POST, OPTIONS" },
      },
    }),
  ),
  {
    name: "POST /health is 405 with Allow: GET, HEAD",
    env,
    request: { path: "/health", body },
    expect: {
      status: 405,
      code: "method_not_allowed",
      error: "Method not allowed. Use GET, HEAD.",
      headers: { allow: "GET, HEAD" },
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
        const response = await transport.send({ config: app.config, sink, pending: app.pending }, { body });
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

describe("requests no HTTP client library would send", () => {
  const batchBody = JSON.stringify(body);
  const post = (headers: string) =>
    `POST /batch/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}\r\n`;

  async function exchange(bytes: string, options?: { abort?: boolean; waitMs?: number }) {
    const h = harness(env);
    const server = serve(h.app);
    try {
      return { ...h, responses: parseResponses(await rawExchange(server.port!, bytes, options)) };
    } finally {
      await server.stop(true);
    }
  }

  test.each([
    ["HTTP/1.0 without Host", "GET /health HTTP/1.0\r\n\r\n"],
    ["a Host that is no host", "GET /health HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n"],
  ])("%s: /health answers JSON", async (_, bytes) => {
    const { responses } = await exchange(bytes);
    expect(responses.map((r) => [r.status, r.headers["content-type"], r.body])).toEqual([
      [200, "application/json;charset=utf-8", '{"ok":true}'],
    ]);
  });

  test("HTTP/1.0 without Host can ingest", async () => {
    const { responses, sink } = await exchange(
      `POST /batch HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: ${batchBody.length}\r\n\r\n${batchBody}`,
    );
    expect(responses.map((r) => [r.status, r.body])).toEqual([[200, '{"status":"ok","ingested":1,"dropped":0}']]);
    expect(sink.events).toHaveLength(1);
  });

  test("pipelined requests are each answered in order", async () => {
    const one = `${post(`Content-Length: ${batchBody.length}\r\n`)}${batchBody}`;
    const { responses } = await exchange(
      `${one}GET /nope HTTP/1.1\r\nHost: x\r\n\r\n${one}GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    expect(responses.map((r) => r.status)).toEqual([200, 404, 200, 200]);
  });

  test("an upload cut off mid-body is a quiet client failure: no stack trace, nothing stored", async () => {
    const logged = spyOn(console, "error").mockImplementation(() => {});
    try {
      const { failures, sink } = await exchange(`${post("Content-Length: 100000\r\n")}{"api_key":"key-1","batch":[`, {
        abort: true,
        waitMs: 500,
      });
      await Bun.sleep(50);
      expect(failures.map((failure) => failure.code)).toEqual(["incomplete_body"]);
      expect(sink.events).toEqual([]);
      expect(logged).not.toHaveBeenCalled();
    } finally {
      logged.mockRestore();
    }
  });
});
