/**
 * The event model both sides share: what capture hands over once a request has passed every check, and the
 * sink it hands it to. `capture/` produces these and `storage/` consumes them; neither imports the other.
 */

export type Properties = Record<string, unknown>;

/**
 * Timestamps as ClickHouse's DateTime64(6, 'UTC') reads them: `YYYY-MM-DD hh:mm:ss.ffffff`, always in UTC.
 * Fixed width, so they also sort and compare correctly as plain strings.
 */
export type Timestamp = string & { readonly __brand: "Timestamp" };

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
  /** When this service received the request. */
  readonly receivedAt: Timestamp;
}

/** Where accepted events go. `ingest` settles once they are stored: resolved means every row is written. */
export interface EventSink {
  ingest(events: readonly CapturedEvent[]): Promise<void>;
}

/** A distinct ID as a client may send one: a non-empty string, or a number (made a string). */
export function distinctIdFrom(value: unknown): string | undefined {
  if (typeof value === "string") return value === "" ? undefined : value;
  if (typeof value === "number") return String(value);
  return undefined;
}

/** A JSON object: not null, not an array. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
