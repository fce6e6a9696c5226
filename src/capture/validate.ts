import { type } from "arktype";
import { fail } from "../errors";
import {
  columnText,
  distinctIdFrom,
  LIMITS,
  NIL_UUID,
  type Properties,
  type Timestamp,
  type TopLevelSets,
} from "../event";
import { isObject, nestsDeeperThan } from "../json";
import { parseTimestamp } from "./timestamp";

/** The batch (docs/behaviour.md#the-batch). Other top-level fields (`historical_migration`, `sent_at`, …) are accepted and ignored. */
const Payload = type({ batch: "unknown[] > 0", "api_key?": "unknown" });
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

/** Batch items that are objects, with their index in the batch. Anything else is dropped. */
export function* objectItems(batch: readonly unknown[]): Generator<[Item, number]> {
  for (let index = 0; index < batch.length; index++) {
    const item = batch[index];
    if (isObject(item)) yield [item, index];
  }
}

/**
 * Splits the batch into events to ingest and a count of dropped ones. An invalid timestamp or
 * properties nested too deep on any item fail the whole request, before anything is stored.
 */
export function acceptEvents(batch: readonly unknown[]): AcceptedBatch {
  const events: AcceptedEvent[] = [];
  for (const [item, index] of objectItems(batch)) {
    const timestamp = itemTimestamp(item, index);
    const properties = isObject(item.properties) ? (item.properties as Properties) : {};
    const topLevelSets = topLevelSetsOf(item);
    for (const value of [properties, topLevelSets.$set, topLevelSets.$set_once]) {
      if (nestsDeeperThan(value, LIMITS.propertiesDepth)) throw fail.tooDeep(index, LIMITS.propertiesDepth);
    }
    const distinctId = distinctIdOf(item, properties);
    if (!EventName.allows(item.event) || distinctId === undefined) continue;
    const event = columnText(item.event, LIMITS.event);
    events.push({ event, distinctId, properties, timestamp, uuid: uuidOf(item.uuid), topLevelSets });
  }
  return { events, dropped: batch.length - events.length };
}

/** Event-level `$set` / `$set_once`, where they are objects; other types are ignored, like other unknown fields. */
function topLevelSetsOf(item: Item): TopLevelSets {
  const topLevelSets: { $set?: Properties; $set_once?: Properties } = {};
  if (isObject(item.$set)) topLevelSets.$set = item.$set;
  if (isObject(item.$set_once)) topLevelSets.$set_once = item.$set_once;
  return topLevelSets;
}

function itemTimestamp(item: Item, index: number): Timestamp | undefined {
  if (item.timestamp === undefined || item.timestamp === null) return undefined;
  const timestamp = typeof item.timestamp === "string" ? parseTimestamp(item.timestamp) : undefined;
  if (timestamp === undefined) throw fail.invalidTimestamp(index);
  return timestamp;
}

/** First usable carrier wins: `distinct_id`, then `properties.distinct_id`, then `properties.$distinct_id`. */
function distinctIdOf(item: Item, properties: Properties): string | undefined {
  for (const carrier of [item.distinct_id, properties.distinct_id, properties.$distinct_id]) {
    const distinctId = distinctIdFrom(carrier);
    if (distinctId !== undefined) return distinctId;
  }
  return undefined;
}

/** The client's event id as stored: a UUID, lower-cased; none for anything else or the nil UUID. */
export function uuidOf(value: unknown): string | undefined {
  if (!Uuid.allows(value)) return undefined;
  const uuid = value.toLowerCase();
  return uuid === NIL_UUID ? undefined : uuid;
}
