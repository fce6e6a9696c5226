import { type } from "arktype";
import {
  columnText,
  distinctIdFrom,
  fail,
  type IngestError,
  isObject,
  LIMITS,
  NIL_UUID,
  nestsDeeperThan,
  type Properties,
  type Timestamp,
  type TopLevelSets,
} from "../contract";
import { parseTimestamp } from "./timestamp";

/** The batch (docs/behaviour.md#the-batch). Other top-level fields (`historical_migration`, `sent_at`, …) are accepted and ignored. */
const Payload = type({ batch: "unknown[] > 0", "api_key?": "unknown", "sent_at?": "unknown" });
export type Payload = typeof Payload.infer;

/** The fields of a batch item this service reads, each still unchecked; others are ignored. */
interface Item {
  readonly event?: unknown;
  readonly distinct_id?: unknown;
  readonly properties?: unknown;
  readonly timestamp?: unknown;
  readonly uuid?: unknown;
  readonly api_key?: unknown;
  readonly $set?: unknown;
  readonly $set_once?: unknown;
  readonly offset?: unknown;
  readonly sent_at?: unknown;
}

const EventName = type("string > 0");
const Uuid = type("string.uuid");

/** An event that will be ingested: it has a name and a distinct ID, and its timestamp (if any) is valid. */
export interface AcceptedEvent {
  readonly event: string;
  readonly distinctId: string;
  readonly properties: Properties;
  readonly timestamp: Timestamp | undefined;
  /** The client's event id, lower-cased; absent when it sent none or not a UUID. */
  readonly uuid: string | undefined;
  readonly topLevelSets: TopLevelSets;
  /** Without a timestamp: how many milliseconds before sending it happened (older SDKs' `offset`). */
  readonly offsetMs: number | undefined;
  /** When the client sent it, by its own clock (`sent_at`), if it said so validly. */
  readonly sentAt: Timestamp | undefined;
}

export interface AcceptedBatch {
  readonly events: AcceptedEvent[];
  readonly dropped: number;
}

/** The whole-request checks: a JSON object with a non-empty `batch` array (400), within the event limit (413). */
export function parsePayload(body: unknown, maxEvents: number): Payload {
  const payload = Payload(body);
  if (payload instanceof type.errors) throw fail.invalidPayload();
  if (payload.batch.length > maxEvents) throw fail.tooManyEvents(payload.batch.length, maxEvents);
  return payload;
}

/** Batch items that are objects; anything else is dropped. */
export function* objectItems(batch: readonly unknown[]): Generator<Item> {
  for (const item of batch) if (isObject(item)) yield item;
}

/** Why an item is dropped while the rest of its batch is ingested. */
export type Dropped = "not an event" | "no event name" | "no distinct ID";

/** Why an item fails its whole request (400, naming the item): nothing of the batch is stored. */
export type Invalid = "invalid timestamp" | "nested too deep";

/** What the contract makes of one batch item, whoever sent it (the API, or an import reading files). */
export type Verdict =
  | { readonly kind: "accepted"; readonly event: AcceptedEvent }
  | { readonly kind: "dropped"; readonly reason: Dropped }
  | { readonly kind: "invalid"; readonly reason: Invalid };

/**
 * One item's verdict. Items that are not objects are dropped; an invalid timestamp or properties nested too deep
 * make it invalid, even on an item that would be dropped; then an item needs a name and a distinct ID.
 */
export function verdictOf(item: unknown): Verdict {
  if (!isObject(item)) return { kind: "dropped", reason: "not an event" };
  const timestamp = itemTimestamp(item);
  if (timestamp === null) return { kind: "invalid", reason: "invalid timestamp" };
  const properties = isObject(item.properties) ? (item.properties as Properties) : {};
  const topLevelSets = topLevelSetsOf(item);
  for (const value of [properties, topLevelSets.$set, topLevelSets.$set_once]) {
    if (nestsDeeperThan(value, LIMITS.propertiesDepth)) return { kind: "invalid", reason: "nested too deep" };
  }
  if (!EventName.allows(item.event)) return { kind: "dropped", reason: "no event name" };
  const distinctId = distinctIdOf(item, properties);
  if (distinctId === undefined) return { kind: "dropped", reason: "no distinct ID" };
  const event = columnText(item.event, LIMITS.event);
  const offsetMs = timestamp === undefined && typeof item.offset === "number" ? item.offset : undefined;
  const sentAt = sentAtOf(item.sent_at);
  return {
    kind: "accepted",
    event: { event, distinctId, properties, timestamp, uuid: uuidOf(item.uuid), topLevelSets, offsetMs, sentAt },
  };
}

/**
 * The API's reading of a batch: its events to ingest and a count of dropped items. The first invalid item fails
 * the whole request, before anything is stored.
 */
export function acceptEvents(batch: readonly unknown[]): AcceptedBatch {
  const events: AcceptedEvent[] = [];
  for (let index = 0; index < batch.length; index++) {
    const verdict = verdictOf(batch[index]);
    if (verdict.kind === "accepted") events.push(verdict.event);
    else if (verdict.kind === "invalid") throw INVALID[verdict.reason](index);
  }
  return { events, dropped: batch.length - events.length };
}

const INVALID: Readonly<Record<Invalid, (index: number) => IngestError>> = {
  "invalid timestamp": (index) => fail.invalidTimestamp(index),
  "nested too deep": (index) => fail.tooDeep(index, LIMITS.propertiesDepth),
};

/** Event-level `$set` / `$set_once`, where they are objects; other types are ignored, like other unknown fields. */
function topLevelSetsOf(item: Item): TopLevelSets {
  const topLevelSets: { $set?: Properties; $set_once?: Properties } = {};
  if (isObject(item.$set)) topLevelSets.$set = item.$set;
  if (isObject(item.$set_once)) topLevelSets.$set_once = item.$set_once;
  return topLevelSets;
}

/** The item's timestamp: undefined when it sent none, null when what it sent is not a valid one. */
function itemTimestamp(item: Item): Timestamp | undefined | null {
  if (item.timestamp === undefined || item.timestamp === null) return undefined;
  const timestamp = typeof item.timestamp === "string" ? parseTimestamp(item.timestamp) : undefined;
  return timestamp ?? null;
}

/** First usable carrier wins: `distinct_id`, then `properties.distinct_id`, then `properties.$distinct_id`. */
function distinctIdOf(item: Item, properties: Properties): string | undefined {
  for (const carrier of [item.distinct_id, properties.distinct_id, properties.$distinct_id]) {
    const distinctId = distinctIdFrom(carrier);
    if (distinctId !== undefined) return distinctId;
  }
  return undefined;
}

/** A `sent_at` as a timestamp; anything that is not a valid one is none. */
export function sentAtOf(value: unknown): Timestamp | undefined {
  return typeof value === "string" ? parseTimestamp(value) : undefined;
}

/** The client's event id as stored: a UUID, lower-cased; none for anything else or the nil UUID. */
export function uuidOf(value: unknown): string | undefined {
  if (!Uuid.allows(value)) return undefined;
  const uuid = value.toLowerCase();
  return uuid === NIL_UUID ? undefined : uuid;
}
