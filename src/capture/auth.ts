import { fail } from "../contract";
import { objectItems, type Payload } from "./validate";

/** A browser request must come from an allowed origin, matched exactly. */
export function checkOrigin(origin: string | null, allowedOrigins: ReadonlySet<string>): void {
  if (origin !== null && !allowedOrigins.has(origin)) throw fail.originNotAllowed();
}

/**
 * docs/behaviour.md#authentication. Every `api_key` in the request (batch level and event level) must be the same (400). A browser
 * request may omit it, but a key it sends must be valid; a backend request needs a valid key. Any failure of
 * the key itself is the same 401, so the response does not tell a missing key from a wrong one.
 */
export function checkApiKey(payload: Payload, origin: string | null, publicApiKeys: ReadonlySet<string>): void {
  const key = requestApiKey(payload);
  const isBrowser = origin !== null;
  if (key === undefined && isBrowser) return;
  if (typeof key !== "string" || !publicApiKeys.has(key)) throw fail.invalidApiKey();
}

/** The one key the request carries, or undefined; `null` counts as not sent. */
function requestApiKey(payload: Payload): unknown {
  let key: unknown = payload.api_key ?? undefined;
  for (const item of objectItems(payload.batch)) {
    const eventKey = item.api_key ?? undefined;
    if (eventKey === undefined) continue;
    if (key !== undefined && key !== eventKey) throw fail.mixedApiKeys();
    key = eventKey;
  }
  return key;
}
