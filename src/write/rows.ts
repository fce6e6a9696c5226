import type { CapturedEvent, Properties, Timestamp } from "../contract";
import { eventPartition } from "../storage";
import type { PersonOnEvent } from "./persons-on-events";

/** The rows of `events`, made from the event model, and how a flush's rows are split into inserts. */

/** One row of `events`. */
export interface EventRow {
  uuid: string;
  event: string;
  /**
   * Stored as its JSON text: the insert writes the object into the String column once (`ClickHouse.insert`), where
   * a string of it would be escaped a second time, and unescaped again by the engine.
   */
  properties: Properties;
  timestamp: Timestamp;
  distinct_id: string;
  person_id: string;
  session_id: string;
  window_id: string;
  current_url: string;
  host: string;
  ip: string;
  geoip: string;
  created_at: Timestamp;
  /** `PERSONS_ON_EVENTS`: the person as the event's flush left it (absent: the column's default, no person). */
  person_properties?: string;
  person_created_at?: Timestamp;
}

/** An event's row; `person`: its person (`PERSONS_ON_EVENTS`; absent when off, and the columns then empty). */
export function eventRow(event: CapturedEvent, personId: string, person?: PersonOnEvent): EventRow {
  const row: EventRow = {
    uuid: event.uuid,
    event: event.event,
    properties: event.properties,
    timestamp: event.timestamp,
    distinct_id: event.distinctId,
    person_id: personId,
    session_id: event.sessionId,
    window_id: event.windowId,
    current_url: event.currentUrl,
    host: event.host,
    ip: event.ip,
    geoip: event.location?.json ?? "",
    created_at: event.receivedAt,
  };
  if (person) Object.assign(row, { person_properties: person.properties, person_created_at: person.createdAt });
  return row;
}

/** ClickHouse refuses an insert whose rows fall into more partitions than this (`max_partitions_per_insert_block`). */
const MAX_PARTITIONS_PER_INSERT = 100;

/** The `events` partition a row falls into. */
const partitionOf = (row: EventRow): string => eventPartition(row.timestamp);

/**
 * Splits event rows into inserts of at most `MAX_PARTITIONS_PER_INSERT` partitions each, so a historical batch
 * spanning months is written, not refused. Ordinary batches (a day or two) stay one insert, in order.
 */
export function eventInserts(rows: readonly EventRow[]): EventRow[][] {
  // counted before grouping: grouping every flush's rows cost a tenth of the JavaScript thread's time under load
  const partitions = new Set<string>();
  for (const row of rows) if (partitions.add(partitionOf(row)).size > MAX_PARTITIONS_PER_INSERT) break;
  if (partitions.size <= MAX_PARTITIONS_PER_INSERT) return [rows as EventRow[]];
  const groups = [...Map.groupBy(rows, partitionOf).values()];
  const inserts: EventRow[][] = [];
  for (let i = 0; i < groups.length; i += MAX_PARTITIONS_PER_INSERT) {
    inserts.push(groups.slice(i, i + MAX_PARTITIONS_PER_INSERT).flat());
  }
  return inserts;
}
