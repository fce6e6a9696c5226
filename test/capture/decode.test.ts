import { expect, test } from "bun:test";
import { request } from "node:http";
import { serve } from "../../src/http/server";
import { type Case, harness, overSocket, runCases } from "../helpers/cases";

const MAX_BATCH_BYTES = 4096;
const env = { PUBLIC_API_KEYS: "key-1", MAX_BATCH_BYTES: String(MAX_BATCH_BYTES) };

const batch = (events = 1) => ({
  api_key: "key-1",
  batch: Array.from({ length: events }, (_, i) => ({ event: "decoded", distinct_id: `user-${i}` })),
});

const UNSUPPORTED_TYPE = {
  status: 415,
  code: "unsupported_content_type",
  error: "Unsupported content type. Use application/json.",
} as const;
const INVALID_PAYLOAD = {
  status: 400,
  code: "invalid_payload",
  error: "Payload must be a JSON object with a non-empty batch array",
} as const;
const TOO_LARGE = {
  status: 413,
  code: "body_too_large",
  error: `Request body is larger than the maximum of ${MAX_BATCH_BYTES} bytes`,
} as const;

/** A body just within the limit: the batch padded with spaces. */
function padded(): string {
  const body = JSON.stringify(batch());
  return `${body.slice(0, -1)}${" ".repeat(MAX_BATCH_BYTES - body.length)}}`;
}

/** A chunked upload far larger than the limit in total, if the server kept reading. */
const endless = () => {
  let produced = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (produced >= 64 * MAX_BATCH_BYTES) return controller.close();
      produced += 1024;
      controller.enqueue(new Uint8Array(1024).fill(32));
    },
  });
};

/** An upload that sends a byte every 20 ms, for far longer than any deadline in these tests, then ends. */
const trickle = () => {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      await Bun.sleep(20);
      if (++sent > 500) return controller.close();
      controller.enqueue(new Uint8Array([32]));
    },
  });
};

const cases: Case[] = [
  ...["application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8"].map(
    (type): Case => ({
      name: `Content-Type ${type} is accepted`,
      env,
      request: { headers: { "content-type": type }, body: batch() },
      expect: { status: 200, ingested: 1 },
    }),
  ),
  ...["text/plain", "application/x-www-form-urlencoded", "application/jsonl", "application/json-patch+json"].map(
    (type): Case => ({
      name: `Content-Type ${type} is 415`,
      env,
      request: { headers: { "content-type": type }, body: batch() },
      expect: UNSUPPORTED_TYPE,
    }),
  ),
  {
    name: "a missing Content-Type is 415",
    env,
    request: { headers: { "content-type": null }, body: batch() },
    expect: UNSUPPORTED_TYPE,
  },
  ...["gzip", "GZip"].map(
    (encoding): Case => ({
      name: `Content-Encoding ${encoding} is inflated`,
      env,
      request: { gzip: true, headers: { "content-encoding": encoding }, body: batch(3) },
      expect: { status: 200, ingested: 3 },
    }),
  ),
  ...["br", "deflate", "identity", "gzip, br", "x-gzip"].map(
    (encoding): Case => ({
      name: `Content-Encoding ${encoding} is 415 and named`,
      env,
      request: { headers: { "content-encoding": encoding }, body: batch() },
      expect: {
        status: 415,
        code: "unsupported_content_encoding",
        error: `Unsupported content-encoding: ${encoding}`,
      },
    }),
  ),
  {
    name: "a gzip-labelled body that is not gzip is 400",
    env,
    request: { headers: { "content-encoding": "gzip" }, body: batch() },
    expect: { status: 400, code: "invalid_gzip", error: "Request body is not valid gzip" },
  },
  {
    name: "truncated gzip is 400",
    env,
    request: {
      headers: { "content-encoding": "gzip" },
      body: Bun.gzipSync(JSON.stringify(batch())).subarray(0, 20),
    },
    expect: { status: 400, code: "invalid_gzip", error: "Request body is not valid gzip" },
  },
  ...["?compression=gzip-js", "?compression=", "?ver=1&compression=base64"].map(
    (query): Case => ({
      name: `the compression query parameter ${query} is 415 with a hint`,
      env,
      request: { path: `/batch/${query}`, body: batch() },
      expect: {
        status: 415,
        code: "compression_not_supported",
        error: /compression query parameter is not supported.*Content-Encoding: gzip/,
      },
    }),
  ),
  {
    name: "other query parameters are ignored",
    env,
    request: { path: "/batch/?ver=1.2.3&_=123", body: batch() },
    expect: { status: 200, ingested: 1 },
  },
  {
    name: "a body of exactly MAX_BATCH_BYTES is accepted",
    env,
    request: { body: padded() },
    expect: { status: 200, ingested: 1 },
  },
  {
    name: "a body one byte over MAX_BATCH_BYTES is 413",
    env,
    request: { body: `${padded()} ` },
    expect: TOO_LARGE,
  },
  {
    name: "a chunked upload is cut off once it passes the limit",
    env,
    request: { body: endless },
    expect: TOO_LARGE,
  },
  {
    name: "gzip that inflates past the limit is 413",
    env,
    request: { gzip: true, body: " ".repeat(MAX_BATCH_BYTES + 1) },
    expect: TOO_LARGE,
  },
  {
    name: "gzip that inflates to within the limit is fine",
    env,
    request: { gzip: true, body: batch(20) },
    expect: { status: 200, ingested: 20 },
  },
  ...["{", "", "not json", '{"batch": [}', "\u00ff\u00fe"].map(
    (body): Case => ({
      name: `malformed JSON ${JSON.stringify(body)} is 400`,
      env,
      request: { body },
      expect: INVALID_PAYLOAD,
    }),
  ),
  { name: "malformed JSON inside gzip is 400", env, request: { gzip: true, body: "{nope" }, expect: INVALID_PAYLOAD },
  {
    name: "an upload that keeps trickling in past REQUEST_TIMEOUT_MS is cut with 408",
    env: { ...env, REQUEST_TIMEOUT_MS: "300" },
    request: { body: trickle },
    expect: { status: 408, code: "request_timeout", error: "Request body was not received within 0.3 seconds" },
  },
];

runCases("decoding the body", cases);

test("the underlying zlib and JSON errors are kept as the cause", async () => {
  const { app, failures } = harness(env);
  await overSocket.send(app, { headers: { "content-encoding": "gzip" }, body: "not gzip" });
  await overSocket.send(app, { body: "{" });
  expect(failures.map((failure) => [failure.code, (failure.cause as Error | undefined)?.name])).toEqual([
    ["invalid_gzip", "Error"],
    ["invalid_payload", "SyntaxError"],
  ]);
});

test("a gzip bomb is not inflated whole: 413, and memory stays flat", async () => {
  const bomb = Bun.gzipSync(new Uint8Array(256 * 1024 * 1024).fill(32)); // 256 MiB of spaces, ~250 KiB on the wire
  const { app } = harness({ ...env, MAX_BATCH_BYTES: String(bomb.length + 1024) });
  const before = process.memoryUsage().rss;
  const response = await overSocket.send(app, { headers: { "content-encoding": "gzip" }, body: bomb });
  expect(response.status).toBe(413);
  expect(await response.json()).toMatchObject({ status: "error" });
  expect(process.memoryUsage().rss - before).toBeLessThan(128 * 1024 * 1024);
});

test("a raw HTTP/1.1 chunked request without Content-Length works", async () => {
  const { app, sink } = harness(env);
  const server = serve(app);
  try {
    const body = JSON.stringify(batch(2));
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const options = {
        host: "127.0.0.1",
        port: server.port,
        path: "/batch/",
        method: "POST",
        headers: { "content-type": "application/json" },
      };
      const req = request(options, (res) => {
        let text = "";
        res.on("data", (chunk) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on("error", reject);
      req.write(body.slice(0, 10));
      req.end(body.slice(10));
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toEqual({ status: "ok", ingested: 2, dropped: 0 });
    expect(sink.events.map((event) => event.distinctId)).toEqual(["user-0", "user-1"]);
  } finally {
    await server.stop(true);
  }
});
