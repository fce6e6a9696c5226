import { type Case, runCases } from "../helpers/cases";

// The documented order of checks: compression parameter, Content-Type, Content-Encoding, Origin, body size,
// gzip, JSON, payload shape, event count, api_key (mixed, then valid), timestamps, then the write.
const ORIGIN = "https://app.example.com";
const KEY = "key-1";
const env = { ALLOWED_ORIGINS: ORIGIN, PUBLIC_API_KEYS: KEY, MAX_EVENTS_PER_BATCH: "2", MAX_BATCH_BYTES: "2048" };
const ok = { api_key: KEY, batch: [{ event: "e", distinct_id: "u" }] };
const evil = "https://evil.example.com";

const cases: Case[] = [
  {
    name: "compression parameter before Content-Type",
    env,
    request: { path: "/batch/?compression=gzip-js", headers: { "content-type": "text/plain" }, body: ok },
    expect: { status: 415, code: "compression_not_supported" },
  },
  {
    name: "Content-Type before Content-Encoding",
    env,
    request: { headers: { "content-type": "text/plain", "content-encoding": "br" }, body: ok },
    expect: { status: 415, code: "unsupported_content_type" },
  },
  {
    name: "Content-Encoding before Origin",
    env,
    request: { headers: { "content-encoding": "br", origin: evil }, body: ok },
    expect: { status: 415, code: "unsupported_content_encoding", error: "Unsupported content-encoding: br" },
  },
  {
    name: "Origin before body size",
    env,
    request: { headers: { origin: evil }, body: "x".repeat(4096) },
    expect: { status: 403, code: "origin_not_allowed" },
  },
  {
    name: "body size before JSON",
    env,
    request: { body: "x".repeat(4096) },
    expect: { status: 413, code: "body_too_large" },
  },
  {
    name: "payload shape before the api_key",
    env,
    request: { body: { api_key: "wrong", batch: [] } },
    expect: { status: 400, code: "invalid_payload" },
  },
  {
    name: "event count before the api_key",
    env,
    request: { body: { api_key: "wrong", batch: [1, 2, 3].map((i) => ({ event: "e", distinct_id: `u${i}` })) } },
    expect: { status: 413, code: "too_many_events", error: "Batch has 3 events, maximum is 2" },
  },
  {
    name: "mixed keys before invalid keys",
    env,
    request: { body: { api_key: "wrong", batch: [{ event: "e", distinct_id: "u", api_key: "also-wrong" }] } },
    expect: { status: 400, code: "mixed_api_keys" },
  },
  {
    name: "the api_key before timestamps",
    env,
    request: { body: { api_key: "wrong", batch: [{ event: "e", distinct_id: "u", timestamp: "bad" }] } },
    expect: { status: 401, code: "invalid_api_key" },
  },
  {
    name: "a success answers ok with what was ingested and dropped",
    env,
    request: { body: { api_key: KEY, batch: [{ event: "e", distinct_id: "u" }, { event: "e" }] } },
    expect: { status: 200, ingested: 1, dropped: 1 },
  },
];

runCases("order of checks: the earlier failure wins", cases);
