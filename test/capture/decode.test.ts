import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { request } from "node:http";
import { count } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const MAX_BATCH_BYTES = 4096;
const KEY = "key-1";
let service: TestService;

beforeAll(async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, MAX_BATCH_BYTES: String(MAX_BATCH_BYTES) });
});
afterAll(() => service.stop());

const batch = (events = 1) => ({
  api_key: KEY,
  batch: Array.from({ length: events }, (_, i) => ({ event: "decoded", distinct_id: `user-${i}` })),
});

async function storedEvents(): Promise<number> {
  return count(service.db, "events");
}

describe("Content-Type", () => {
  test.each(["application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8"])(
    "%p is accepted",
    async (contentType) => {
      const sent = await send(service, batch(), { headers: { "content-type": contentType } });
      expect(sent).toMatchObject({ status: 200, body: { status: "ok", ingested: 1, dropped: 0 } });
    },
  );

  test.each(["text/plain", "application/x-www-form-urlencoded", "application/jsonl", "application/json-patch+json"])(
    "%p is 415",
    async (contentType) => {
      const before = await storedEvents();
      const sent = await send(service, batch(), { headers: { "content-type": contentType } });
      expect(sent).toMatchObject({
        status: 415,
        body: { status: "error", error: "Unsupported content type. Use application/json." },
      });
      expect(await storedEvents()).toBe(before);
    },
  );

  test("a missing Content-Type is 415", async () => {
    const response = await fetch(`${service.url}/batch/`, {
      method: "POST",
      body: new Blob([JSON.stringify(batch())]),
    });
    expect(response.status).toBe(415);
    expect(await response.json()).toEqual({
      status: "error",
      error: "Unsupported content type. Use application/json.",
    });
  });
});

describe("Content-Encoding", () => {
  test("gzip bodies are inflated (any case)", async () => {
    for (const encoding of ["gzip", "GZip"]) {
      const sent = await send(service, batch(3), { gzip: true, headers: { "content-encoding": encoding } });
      expect(sent).toMatchObject({ status: 200, body: { ingested: 3, dropped: 0 } });
    }
  });

  test.each(["br", "deflate", "identity", "gzip, br", "x-gzip"])("%p is 415 and names the value", async (encoding) => {
    const sent = await send(service, batch(), { headers: { "content-encoding": encoding } });
    expect(sent).toMatchObject({
      status: 415,
      body: { status: "error", error: `Unsupported content-encoding: ${encoding}` },
    });
  });

  test("a body that is not gzip is 400", async () => {
    const before = await storedEvents();
    const sent = await send(service, batch(), { headers: { "content-encoding": "gzip" } });
    expect(sent).toMatchObject({ status: 400, body: { status: "error", error: "Request body is not valid gzip" } });
    const truncated = Bun.gzipSync(JSON.stringify(batch())).subarray(0, 20);
    expect((await send(service, truncated, { headers: { "content-encoding": "gzip" } })).status).toBe(400);
    expect(await storedEvents()).toBe(before);
  });
});

describe("the compression query parameter", () => {
  test.each(["?compression=gzip-js", "?compression=", "?ver=1&compression=base64"])("%s is 415", async (query) => {
    const sent = await send(service, batch(), { path: `/batch/${query}` });
    expect(sent.status).toBe(415);
    expect(sent.body.status).toBe("error");
    expect(sent.body.error).toContain("compression query parameter is not supported");
    expect(sent.body.error).toContain("Content-Encoding: gzip");
  });

  test("other query parameters are ignored", async () => {
    expect((await send(service, batch(), { path: "/batch/?ver=1.2.3&_=123" })).status).toBe(200);
  });
});

describe("MAX_BATCH_BYTES", () => {
  const tooBig = "x".repeat(MAX_BATCH_BYTES + 1);

  test("a body just within the limit is accepted", async () => {
    const body = JSON.stringify(batch());
    const padded = `${body.slice(0, -1) + " ".repeat(MAX_BATCH_BYTES - body.length)}}`;
    expect(padded.length).toBe(MAX_BATCH_BYTES);
    expect((await send(service, padded)).status).toBe(200);
  });

  test("a larger Content-Length is 413 with an Error object", async () => {
    const sent = await send(service, tooBig);
    expect(sent).toMatchObject({
      status: 413,
      body: { status: "error", error: `Request body is larger than the maximum of ${MAX_BATCH_BYTES} bytes` },
    });
  });

  test("a chunked upload is cut off once it passes the limit", async () => {
    let produced = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        // far more than the limit in total, if the server kept reading
        if (produced >= 64 * MAX_BATCH_BYTES) return controller.close();
        produced += 1024;
        controller.enqueue(new Uint8Array(1024).fill(32));
      },
    });
    const response = await fetch(`${service.url}/batch/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ status: "error" });
  });

  test("a gzip body whose inflated size passes the limit is 413 (a gzip bomb is not inflated whole)", async () => {
    const bomb = Bun.gzipSync(new Uint8Array(256 * 1024 * 1024).fill(32)); // 256 MiB of spaces, ~250 KiB on the wire
    const small = await startService({ PUBLIC_API_KEYS: KEY, MAX_BATCH_BYTES: String(bomb.length + 1024) });
    try {
      const before = process.memoryUsage().rss;
      const sent = await send(small, bomb, { headers: { "content-encoding": "gzip" } });
      expect(sent).toMatchObject({ status: 413, body: { status: "error" } });
      expect(process.memoryUsage().rss - before).toBeLessThan(128 * 1024 * 1024);
    } finally {
      await small.stop();
    }
  });

  test("a gzip body that inflates within the limit is fine even if it is close", async () => {
    const sent = await send(service, batch(20), { gzip: true });
    expect(sent).toMatchObject({ status: 200, body: { ingested: 20 } });
  });
});

describe("JSON", () => {
  test.each(["{", "", "not json", '{"batch": [}', "\u00ff\u00fe"])("%p is 400", async (body) => {
    const sent = await send(service, body);
    expect(sent).toMatchObject({
      status: 400,
      body: { status: "error", error: "Payload must be a JSON object with a non-empty batch array" },
    });
  });

  test("malformed JSON inside gzip is 400 too", async () => {
    const sent = await send(service, "{nope", { gzip: true });
    expect(sent.status).toBe(400);
  });
});

test("a raw HTTP/1.1 chunked request without Content-Length works", async () => {
  const body = JSON.stringify(batch(2));
  const { port } = new URL(service.url);
  const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, path: "/batch/", method: "POST", headers: { "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.write(body.slice(0, 10));
    req.end(body.slice(10));
  });
  expect(answer.status).toBe(200);
  expect(JSON.parse(answer.text)).toEqual({ status: "ok", ingested: 2, dropped: 0 });
});
