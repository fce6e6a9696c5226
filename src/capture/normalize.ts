import { type CapturedEvent, columnText, isRawNumber, LIMITS, numberText, type Timestamp } from "../contract";
import type { AcceptedEvent } from "./validate";

/**
 * The well-known properties get their own columns. An event without a timestamp happened when it
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
    sessionId: column(properties.$session_id, LIMITS.sessionId),
    windowId: column(properties.$window_id, LIMITS.windowId),
    currentUrl: column(properties.$current_url, LIMITS.currentUrl),
    host: column(properties.$host, LIMITS.host),
    receivedAt,
    topLevelSets: event.topLevelSets,
  };
}

/** A string, or a number as text (digits as sent); anything else is no value. Bounded and well-formed. */
function column(value: unknown, max: number): string {
  if (typeof value === "string") return columnText(value, max);
  if (typeof value === "number" || isRawNumber(value)) return numberText(value);
  return "";
}
