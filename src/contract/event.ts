import { isRawNumber, numberText } from "./json";

/**
 * The event model both sides share: what capture hands over once a request has passed every check, and the
 * sink it hands it to. `capture/` produces these and `write/` consumes them; neither imports the other.
 */

export type Properties = Record<string, unknown>;

/**
 * Timestamps as ClickHouse's DateTime64(6, 'UTC') reads them: `YYYY-MM-DD hh:mm:ss.ffffff`, always in UTC.
 * Fixed width, so they also sort and compare correctly as plain strings.
 */
export type Timestamp = string & { readonly __brand: "Timestamp" };

/** The all-zero UUID: no event id a client chose, and below every person id. */
export const NIL_UUID = "00000000-0000-0000-0000-000000000000";

/** An accepted event in the form it is stored in, minus its person, which identity resolution adds. */
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
  /** The client's address: the event's own `$ip`, else the request's (`CAPTURE_IP`, `TRUSTED_PROXIES`); or empty. */
  readonly ip: string;
  /**
   * Where the client's address is (`GEOIP`): PostHog's `$geoip_*` properties that the event does not carry itself.
   * Stored beside `properties` (in `events.geoip`), which stay as sent.
   */
  readonly location: EventLocation | undefined;
  /** When this service received the request. */
  readonly receivedAt: Timestamp;
  /**
   * `$set` and `$set_once` sent beside `properties` rather than inside them, as several SDKs' identify and set
   * calls do. They update the person (merged over the ones in `properties`, winning a conflict, as PostHog's
   * ingestion does) and are not stored with the event.
   */
  readonly topLevelSets: TopLevelSets;
  /**
   * Sent with `$process_person_profile: false` (posthog-js's anonymous events under `person_profiles:
   * 'identified_only'`), and not an `$identify`, `$create_alias` or `$merge_dangerously`, which always link: the
   * event takes its ID's person, or the one its first profile would make, and makes or changes no person. So are
   * PostHog's `$$heatmap` (which it keeps out of person processing) and `$groupidentify` (about a group).
   */
  readonly personless: boolean;
  /**
   * An `$exception`: PostHog processes exceptions apart from other events, where their person updates cannot be
   * ordered among those of other events, so its `$set`, `$set_once`, `$unset` and automatic person properties
   * count only when it creates its person; it still makes and links that person as any event.
   */
  readonly updatesNewPersonOnly: boolean;
}

/** PostHog's names for where a client's address is: the properties its GeoIP adds. */
export const GEO_PROPERTIES = [
  "$geoip_city_name",
  "$geoip_country_name",
  "$geoip_country_code",
  "$geoip_continent_name",
  "$geoip_continent_code",
  "$geoip_postal_code",
  "$geoip_latitude",
  "$geoip_longitude",
  "$geoip_accuracy_radius",
  "$geoip_time_zone",
  "$geoip_subdivision_1_code",
  "$geoip_subdivision_1_name",
  "$geoip_subdivision_2_code",
  "$geoip_subdivision_2_name",
] as const;

export type GeoProperty = (typeof GEO_PROPERTIES)[number];

/** A location: PostHog's `$geoip_*` properties (strings, or numbers for coordinates), and the same as JSON. */
export interface EventLocation {
  readonly properties: Readonly<Record<string, string | number>>;
  /** `properties` as one JSON object, made once for every event from the same address. */
  readonly json: string;
}

/** `$set` and `$set_once` as sent at an event's top level, beside `properties`. */
export interface TopLevelSets {
  readonly $set?: Properties;
  readonly $set_once?: Properties;
}

/** What a batch came to: the body of a 200 beside `status: "ok"`. */
export interface CaptureResult {
  readonly ingested: number;
  readonly dropped: number;
}

/** Where accepted events go. `ingest` settles once they are stored: resolved means every row is written. */
export interface EventSink {
  ingest(events: readonly CapturedEvent[]): Promise<void>;
}

/**
 * Limits on what becomes a column or a key (docs/behaviour.md#limits). Longer values are truncated; `properties` keep
 * the full value as sent. PostHog's capture truncates distinct IDs at 200 characters too.
 */
export const LIMITS = {
  event: 200,
  distinctId: 200,
  sessionId: 200,
  windowId: 200,
  host: 255,
  currentUrl: 8192,
  ip: 64,
  /** Objects and arrays within an event's `properties` (itself one level). Deeper fails the request with 400. */
  propertiesDepth: 64,
} as const;

/**
 * Text as stored in a column and used as a key: at most `max` UTF-16 code units (never half a surrogate pair),
 * and well-formed, each lone surrogate replaced by U+FFFD, as invalid UTF-8 bytes already are when the body is
 * decoded. One rule for what is inserted, what is looked up and what the person id is derived from.
 */
export function columnText(value: string, max: number): string {
  let text = value;
  if (text.length > max) {
    const cut = text.charCodeAt(max - 1);
    text = text.slice(0, cut >= 0xd800 && cut <= 0xdbff ? max - 1 : max);
  }
  return text.isWellFormed() ? text : text.toWellFormed();
}

/**
 * An identifier as a client may send one: a non-empty string, or a number, written with the digits sent when a
 * double cannot hold them (`12345678901234567890`). Bounded to `max` and well-formed by `columnText`.
 */
export function identifierFrom(value: unknown, max: number): string | undefined {
  if (typeof value === "string") return value === "" ? undefined : columnText(value, max);
  if (typeof value === "number" || isRawNumber(value)) return columnText(numberText(value), max);
  return undefined;
}

/** A distinct ID as a client may send one (`identifierFrom`). */
export function distinctIdFrom(value: unknown): string | undefined {
  return identifierFrom(value, LIMITS.distinctId);
}
