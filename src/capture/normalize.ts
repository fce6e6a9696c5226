import {
  type CapturedEvent,
  columnText,
  type EventLocation,
  isRawNumber,
  LIMITS,
  numberText,
  type Properties,
  type Timestamp,
} from "../contract";
import { type GeoIp, locationBeside } from "./geoip";
import { millisOf, shifted } from "./timestamp";
import type { AcceptedEvent } from "./validate";

/** What the request and the settings say about a batch's events, beyond the events themselves. */
export interface BatchContext {
  /** `CORRECT_CLOCK_SKEW`. */
  readonly correctClockSkew: boolean;
  /** The batch's `sent_at`, for events that carry none of their own. */
  readonly sentAt: Timestamp | undefined;
  /**
   * `PERSONLESS_EVENTS`: whether `$process_person_profile: false` (and PostHog's own exceptions, `$$heatmap` and
   * `$exception`) keeps an event from making or changing a person.
   */
  readonly personlessEvents: boolean;
  /** `CAPTURE_IP`: whether events keep a client address at all. */
  readonly captureIp: boolean;
  /** The client's address, for events without their own `$ip` (none for an import). */
  readonly ip: string | undefined;
  /** `GEOIP`: where addresses are. */
  readonly geo?: GeoIp | undefined;
}

/** The events that put two IDs on one person: they always link, whatever they carry. */
const LINKING_EVENTS = new Set(["$identify", "$create_alias", "$merge_dangerously"]);

/**
 * Events PostHog keeps out of person processing: a `$groupidentify` is about a group (its distinct ID, posthog-node's
 * `$<type>_<key>`, is nobody's), a `$$heatmap` is taken apart for heatmaps.
 */
const NO_PERSON_EVENTS = new Set(["$groupidentify", "$$heatmap"]);

const AS_SENT: BatchContext = {
  correctClockSkew: false,
  sentAt: undefined,
  personlessEvents: true,
  captureIp: true,
  ip: undefined,
};

/**
 * The well-known properties get their own columns. An event without a timestamp happened when it
 * was received (or `offset` before); one without a usable `uuid` gets a time-ordered (v7) one.
 */
export function normalize(event: AcceptedEvent, receivedAt: Timestamp, context: BatchContext = AS_SENT): CapturedEvent {
  const { properties } = event;
  const linking = LINKING_EVENTS.has(event.event);
  const ip = context.captureIp ? column(properties.$ip, LIMITS.ip) || (context.ip ?? "") : "";
  return {
    uuid: event.uuid ?? Bun.randomUUIDv7(),
    event: event.event,
    distinctId: event.distinctId,
    properties,
    timestamp: timestampOf(event, receivedAt, context),
    sessionId: column(properties.$session_id, LIMITS.sessionId),
    windowId: column(properties.$window_id, LIMITS.windowId),
    currentUrl: column(properties.$current_url, LIMITS.currentUrl),
    host: column(properties.$host, LIMITS.host),
    ip,
    location: locationOf(properties, ip, context.geo),
    receivedAt,
    topLevelSets: event.topLevelSets,
    personless:
      context.personlessEvents &&
      !linking &&
      (properties.$process_person_profile === false || NO_PERSON_EVENTS.has(event.event)),
    updatesNewPersonOnly: context.personlessEvents && event.event === "$exception",
  };
}

/**
 * When the event happened: its timestamp as sent, or with `correctClockSkew` moved by the client clock's error that
 * `sent_at` shows (PostHog's `arrival + (timestamp − sent_at)`); without one, `offset` milliseconds before arrival;
 * else its arrival. A correction that would land outside 1900–2299 is not made.
 */
function timestampOf(event: AcceptedEvent, receivedAt: Timestamp, context: BatchContext): Timestamp {
  if (event.timestamp !== undefined) {
    const sentAt = event.sentAt ?? context.sentAt;
    if (!context.correctClockSkew || sentAt === undefined) return event.timestamp;
    return shifted(event.timestamp, millisOf(receivedAt) - millisOf(sentAt)) ?? event.timestamp;
  }
  if (event.offsetMs !== undefined) return shifted(receivedAt, -event.offsetMs) ?? receivedAt;
  return receivedAt;
}

/** Where `ip` is (GeoIP), beside what the event says itself, unless it says `$geoip_disable: true`. */
function locationOf(properties: Properties, ip: string, geo: GeoIp | undefined): EventLocation | undefined {
  if (geo === undefined || ip === "" || properties.$geoip_disable === true) return undefined;
  const location = geo.locate(ip);
  return location === undefined ? undefined : locationBeside(properties, location);
}

/** A string, or a number as text (digits as sent); anything else is no value. Bounded and well-formed. */
function column(value: unknown, max: number): string {
  if (typeof value === "string") return columnText(value, max);
  if (typeof value === "number" || isRawNumber(value)) return numberText(value);
  return "";
}
