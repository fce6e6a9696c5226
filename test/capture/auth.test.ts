import { type Case, runCases } from "../helpers/cases";

const ORIGIN = "https://app.example.com";
const both = { ALLOWED_ORIGINS: `${ORIGIN}, http://localhost:3000`, PUBLIC_API_KEYS: "key-1, key-2" };
const browserOnly = { ALLOWED_ORIGINS: ORIGIN };

const event = (extra: Record<string, unknown> = {}) => ({ event: "signed_up", distinct_id: "user-1", ...extra });
const INVALID_KEY = { status: 401, code: "invalid_api_key", error: "Invalid api_key" } as const;
const MIXED = {
  status: 400,
  code: "mixed_api_keys",
  error: "Mixed api_key values in one request are not supported",
} as const;
const from = (origin: string) => ({ origin });

const cases: Case[] = [
  // backend requests (no Origin)
  {
    name: "backend: a valid key at batch level is accepted",
    env: both,
    request: { body: { api_key: "key-1", batch: [event()] } },
    expect: { status: 200, ingested: 1 },
  },
  {
    name: "backend: a valid key at event level is accepted",
    env: both,
    request: { body: { batch: [event({ api_key: "key-2" }), event({ api_key: "key-2" })] } },
    expect: { status: 200, ingested: 2 },
  },
  {
    name: "backend: the same key at both levels is accepted",
    env: both,
    request: { body: { api_key: "key-1", batch: [event({ api_key: "key-1" })] } },
    expect: { status: 200, ingested: 1 },
  },
  { name: "backend: a missing key is 401", env: both, request: { body: { batch: [event()] } }, expect: INVALID_KEY },
  {
    name: "backend: a null key counts as missing: 401",
    env: both,
    request: { body: { api_key: null, batch: [event()] } },
    expect: INVALID_KEY,
  },
  ...(["key-3", "", " key-1", 42, { key: "key-1" }] as unknown[]).map(
    (api_key): Case => ({
      name: `backend: an unknown key ${JSON.stringify(api_key)} is 401`,
      env: both,
      request: { body: { api_key, batch: [event()] } },
      expect: INVALID_KEY,
    }),
  ),
  {
    name: "backend ingest is off without PUBLIC_API_KEYS: no key is 401",
    env: browserOnly,
    request: { body: { batch: [event()] } },
    expect: INVALID_KEY,
  },
  {
    name: "backend ingest is off without PUBLIC_API_KEYS: any key is 401",
    env: browserOnly,
    request: { body: { api_key: "key-1", batch: [event()] } },
    expect: INVALID_KEY,
  },
  // browser requests (with Origin)
  ...[ORIGIN, "http://localhost:3000"].map(
    (origin): Case => ({
      name: `browser: the allowed origin ${origin} needs no key`,
      env: both,
      request: { headers: from(origin), body: { batch: [event()] } },
      expect: { status: 200, ingested: 1 },
    }),
  ),
  {
    name: "browser: no key is needed with no backend keys configured",
    env: browserOnly,
    request: { headers: from(ORIGIN), body: { batch: [event()] } },
    expect: { status: 200, ingested: 1 },
  },
  {
    name: "browser: a valid key is accepted",
    env: both,
    request: { headers: from(ORIGIN), body: { api_key: "key-1", batch: [event()] } },
    expect: { status: 200, ingested: 1 },
  },
  {
    name: "browser: an invalid batch-level key is 401",
    env: both,
    request: { headers: from(ORIGIN), body: { api_key: "nope", batch: [event()] } },
    expect: INVALID_KEY,
  },
  {
    name: "browser: an invalid event-level key is 401",
    env: both,
    request: { headers: from(ORIGIN), body: { batch: [event({ api_key: "nope" })] } },
    expect: INVALID_KEY,
  },
  {
    name: "browser: with no backend keys configured, any key sent is invalid",
    env: browserOnly,
    request: { headers: from(ORIGIN), body: { api_key: "key-1", batch: [event()] } },
    expect: INVALID_KEY,
  },
  ...[
    "https://evil.example.com",
    "http://app.example.com",
    `${ORIGIN}/`,
    `${ORIGIN}:443`,
    "HTTPS://APP.EXAMPLE.COM",
    "null",
    "",
  ].map(
    (origin): Case => ({
      name: `browser: the origin ${JSON.stringify(origin)} does not match exactly: 403, whatever the key`,
      env: both,
      request: { headers: from(origin), body: { api_key: "key-1", batch: [event()] } },
      expect: { status: 403, code: "origin_not_allowed", error: "Origin is not allowed" },
    }),
  ),
  // several api_key values in one request
  {
    name: "batch-level and event-level keys differ: 400",
    env: both,
    request: { body: { api_key: "key-1", batch: [event({ api_key: "key-2" })] } },
    expect: MIXED,
  },
  {
    name: "two events' keys differ: 400, even when one of them is invalid",
    env: both,
    request: { body: { batch: [event({ api_key: "key-1" }), event({ api_key: "bad" })] } },
    expect: MIXED,
  },
  {
    name: "two events' keys differ: 400, even from a browser",
    env: both,
    request: { headers: from(ORIGIN), body: { batch: [event({ api_key: "key-1" }), event({ api_key: "key-2" })] } },
    expect: MIXED,
  },
  {
    name: "events without a key do not count as a different key",
    env: both,
    request: { body: { api_key: "key-1", batch: [event(), event({ api_key: "key-1" }), event({ api_key: null })] } },
    expect: { status: 200, ingested: 3 },
  },
];

runCases("authentication", cases);
