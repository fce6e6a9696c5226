import type { CapturedEvent, Timestamp } from "../event";
import type { AcceptedEvent } from "./validate";

/**
 * SPEC §2.3: the well-known properties get their own columns. An event without a timestamp happened when it
 * was received; one without a usable `uuid` gets a time-ordered (v7) one.
 */
export function normalize(event: AcceptedEvent, receivedAt: Timestamp): CapturedEvent {
  const { properties } = event;
  return {
    uuid: event.uuid ?? Bun.randomUUIDv7(),
    event: event.event,
    distinctId: event.distinctId,
    properties,
    timestamp: event.timestamp ?? receivedAt,
    sessionId: column(properties.$session_id),
    windowId: column(properties.$window_id),
    currentUrl: column(properties.$current_url),
    host: column(properties.$host),
    receivedAt,
  };
}

function column(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(value);
  return "";
}
