import type { Timestamp } from "./timestamp";
import type { AcceptedEvent, Properties } from "./validate";

/** An event in the form it is stored in, minus its person, which identity resolution adds. */
export interface CapturedEvent {
  readonly uuid: string;
  readonly event: string;
  readonly distinctId: string;
  /** As sent, including the keys lifted into columns below. */
  readonly properties: Properties;
  readonly timestamp: Timestamp;
  readonly sessionId: string;
  readonly windowId: string;
  readonly currentUrl: string;
  readonly host: string;
  /** When this service received the request. */
  readonly receivedAt: Timestamp;
}

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
