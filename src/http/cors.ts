import type { Config } from "../config";
import { fail } from "../contract";

/**
 * CORS for browser callers (allowed origins only, no credentials). A browser preflights every cross-origin POST
 * with `Content-Type: application/json`; the answer names the one method and the headers a batch needs.
 */

export const ALLOWED_METHODS = "POST, OPTIONS";
const DEFAULT_ALLOWED_HEADERS = "Content-Type, Content-Encoding";
/** The headers a batch may carry: ours, and the CORS-safelisted ones a browser or SDK may add. */
const ALLOWED_HEADERS = new Set(["content-type", "content-encoding", "accept", "accept-language", "content-language"]);
/** How long a browser may reuse a preflight (Chromium caps it at 2 hours, Firefox at 24). */
const MAX_AGE_SECONDS = "7200";

/** The origin a response may be shared with: the request's `Origin` when it is allowed. */
export function allowedOrigin(request: Request, config: Config): string | undefined {
  const origin = request.headers.get("origin");
  return origin !== null && config.allowedOrigins.has(origin) ? origin : undefined;
}

/** Marks a response as readable by `origin`. Every response to an allowed origin gets this, errors included. */
export function shareWith(response: Response, origin: string): Response {
  response.headers.set("Access-Control-Allow-Origin", origin);
  response.headers.append("Vary", "Origin");
  return response;
}

/**
 * `OPTIONS` on the batch path. With an allowed `Origin`: 204 with what the browser asked about (the requested
 * headers are echoed when every one of them is allowed). With another origin: 403, and nothing that allows it.
 * Without an `Origin` (no preflight, just OPTIONS): 204 with `Allow`.
 */
export function preflight(request: Request, config: Config): Response {
  const origin = request.headers.get("origin");
  if (origin === null) return new Response(null, { status: 204, headers: { Allow: ALLOWED_METHODS } });
  if (!config.allowedOrigins.has(origin)) throw fail.originNotAllowed();
  return new Response(null, {
    status: 204,
    headers: {
      "Access-Control-Allow-Methods": ALLOWED_METHODS,
      "Access-Control-Allow-Headers": allowedHeaders(request.headers.get("access-control-request-headers")),
      "Access-Control-Max-Age": MAX_AGE_SECONDS,
    },
  });
}

function allowedHeaders(requested: string | null): string {
  const names = (requested ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  const echo = names.length > 0 && names.every((name) => ALLOWED_HEADERS.has(name.toLowerCase()));
  return echo ? names.join(", ") : DEFAULT_ALLOWED_HEADERS;
}
