import { type Case, runCases } from "../helpers/cases";

const ORIGIN = "https://app.example.com";
const env = { ALLOWED_ORIGINS: `${ORIGIN}, http://localhost:3000`, PUBLIC_API_KEYS: "key-1" };
const shared = (origin: string) => ({ "access-control-allow-origin": origin, vary: "Origin" });
const notShared = { "access-control-allow-origin": null, "access-control-allow-methods": null };
const batch = { batch: [{ event: "e", distinct_id: "u" }] };
const preflight = (origin: string | null, requested?: string) => ({
  method: "OPTIONS",
  headers: {
    "content-type": null,
    origin,
    "access-control-request-method": "POST",
    "access-control-request-headers": requested ?? null,
  },
});

const cases: Case[] = [
  ...["/batch/", "/batch"].map(
    (path): Case => ({
      name: `a preflight of ${path} from an allowed origin is 204 with what the browser needs`,
      env,
      request: { ...preflight(ORIGIN, "content-type"), path },
      expect: {
        status: 204,
        headers: {
          ...shared(ORIGIN),
          "access-control-allow-methods": "POST, OPTIONS",
          "access-control-allow-headers": "content-type",
          "access-control-max-age": "7200",
          "access-control-allow-credentials": null,
        },
      },
    }),
  ),
  {
    name: "requested headers are echoed when each is allowed",
    env,
    request: preflight("http://localhost:3000", "Content-Type, Content-Encoding, Accept-Language"),
    expect: {
      status: 204,
      headers: {
        ...shared("http://localhost:3000"),
        "access-control-allow-headers": "Content-Type, Content-Encoding, Accept-Language",
      },
    },
  },
  {
    name: "a requested header that is not allowed is not echoed: only the batch headers are named",
    env,
    request: preflight(ORIGIN, "content-type, x-custom-auth"),
    expect: {
      status: 204,
      headers: { ...shared(ORIGIN), "access-control-allow-headers": "Content-Type, Content-Encoding" },
    },
  },
  {
    name: "a preflight from a disallowed origin is 403 with nothing that allows it",
    env,
    request: preflight("https://evil.example.com", "content-type"),
    expect: { status: 403, code: "origin_not_allowed", error: "Origin is not allowed", headers: notShared },
  },
  {
    name: "OPTIONS without Origin is a plain 204 with Allow",
    env,
    request: { method: "OPTIONS", headers: { "content-type": null } },
    expect: { status: 204, headers: { allow: "POST, OPTIONS", ...notShared } },
  },
  {
    name: "a success to an allowed origin is shared",
    env,
    request: { headers: { origin: ORIGIN }, body: batch },
    expect: { status: 200, ingested: 1, headers: shared(ORIGIN) },
  },
  ...(
    [
      ["a 400", { body: "{" }, 400, "invalid_payload"],
      ["a 401", { body: { api_key: "nope", ...batch } }, 401, "invalid_api_key"],
      ["a 415", { headers: { "content-type": "text/plain" }, body: batch }, 415, "unsupported_content_type"],
      ["a 405", { method: "PUT", body: batch }, 405, "method_not_allowed"],
      ["a 404", { path: "/nope", body: batch }, 404, "not_found"],
    ] as const
  ).map(
    ([name, request, status, code]): Case => ({
      name: `${name} to an allowed origin is shared, so the page can read why`,
      env,
      request: { ...request, headers: { ...("headers" in request ? request.headers : {}), origin: ORIGIN } },
      expect: { status, code, headers: shared(ORIGIN) },
    }),
  ),
  {
    name: "a 413 before the body is read is shared too",
    env: { ...env, MAX_BATCH_BYTES: "10" },
    request: { headers: { origin: ORIGIN }, body: batch },
    expect: { status: 413, code: "body_too_large", headers: shared(ORIGIN) },
  },
  {
    name: "a POST from a disallowed origin is 403 and not shared",
    env,
    request: { headers: { origin: "https://evil.example.com" }, body: batch },
    expect: { status: 403, code: "origin_not_allowed", headers: notShared },
  },
  {
    name: "a backend request (no Origin) carries no CORS headers",
    env,
    request: { body: { api_key: "key-1", ...batch } },
    expect: { status: 200, ingested: 1, headers: { ...notShared, vary: null } },
  },
];

runCases("CORS", cases);
