import type { CapturedEvent, Timestamp } from "../event";
import type { ClickHouse } from "./clickhouse";

/** One row of `events`. */
export interface EventRow {
  uuid: string;
  event: string;
  properties: string;
  timestamp: Timestamp;
  distinct_id: string;
  person_id: string;
  session_id: string;
  window_id: string;
  current_url: string;
  host: string;
  created_at: Timestamp;
}

export function eventRow(event: CapturedEvent, personId: string): EventRow {
  return {
    uuid: event.uuid,
    event: event.event,
    properties: JSON.stringify(event.properties),
    timestamp: event.timestamp,
    distinct_id: event.distinctId,
    person_id: personId,
    session_id: event.sessionId,
    window_id: event.windowId,
    current_url: event.currentUrl,
    host: event.host,
    created_at: event.receivedAt,
  };
}

/** One version of a person; the highest `version` is the current one. */
export interface PersonRow {
  id: string;
  /** The person's primary distinct ID: the identified one once there is one, else the first seen. */
  distinct_id: string;
  properties: string;
  is_identified: 0 | 1;
  is_deleted: 0 | 1;
  created_at: Timestamp;
  version: number;
}

/** One version of a distinct ID's link to its person; the highest `version` is the current one. */
export interface DistinctIdRow {
  distinct_id: string;
  person_id: string;
  is_deleted: 0 | 1;
  version: number;
}

/**
 * Creates the database and tables if they are missing; safe to run at every start.
 *
 * - `events` follows PostHog's layout. ReplacingMergeTree on a key that ends in the event's uuid, so a retried
 *   event (same uuid, timestamp, name and distinct ID) collapses to one row; the newest copy wins.
 * - `persons` and `person_distinct_ids` keep every version and collapse to the highest `version` (FINAL, or
 *   argMax). `is_deleted` is a plain column, so a merged-away person still shows in FINAL, marked deleted.
 *   The bloom filter finds a person's distinct IDs without scanning the table (needed for merges).
 * - `sessions` is kept by a materialized view over events that carry `$session_id`. Read it with the -Merge
 *   combinators (or min/max/sum) grouped by `session_id`.
 */
export async function createSchema(db: ClickHouse): Promise<void> {
  const statements = [
    `CREATE DATABASE IF NOT EXISTS \`${db.database}\``,
    `CREATE TABLE IF NOT EXISTS ${db.table("events")} (
      uuid UUID,
      event String,
      properties String,
      timestamp DateTime64(6, 'UTC'),
      distinct_id String,
      person_id UUID,
      session_id String,
      window_id String,
      current_url String,
      host String,
      created_at DateTime64(6, 'UTC')
    ) ENGINE = ReplacingMergeTree(created_at)
    PARTITION BY toYYYYMM(timestamp)
    ORDER BY (toDate(timestamp), event, cityHash64(distinct_id), cityHash64(uuid))`,
    `CREATE TABLE IF NOT EXISTS ${db.table("persons")} (
      id UUID,
      distinct_id String,
      properties String,
      is_identified UInt8,
      is_deleted UInt8,
      created_at DateTime64(6, 'UTC'),
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY id`,
    `CREATE TABLE IF NOT EXISTS ${db.table("person_distinct_ids")} (
      distinct_id String,
      person_id UUID,
      is_deleted UInt8,
      version UInt64,
      INDEX person_id_index person_id TYPE bloom_filter GRANULARITY 1
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY distinct_id`,
    `CREATE TABLE IF NOT EXISTS ${db.table("sessions")} (
      session_id String,
      distinct_id AggregateFunction(argMin, String, DateTime64(6, 'UTC')),
      min_timestamp SimpleAggregateFunction(min, DateTime64(6, 'UTC')),
      max_timestamp SimpleAggregateFunction(max, DateTime64(6, 'UTC')),
      event_count SimpleAggregateFunction(sum, UInt64),
      pageview_count SimpleAggregateFunction(sum, UInt64),
      entry_url AggregateFunction(argMin, String, DateTime64(6, 'UTC')),
      exit_url AggregateFunction(argMax, String, DateTime64(6, 'UTC'))
    ) ENGINE = AggregatingMergeTree
    ORDER BY session_id`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db.table("sessions_mv")} TO ${db.table("sessions")} AS
    SELECT
      session_id,
      argMinState(distinct_id, timestamp) AS distinct_id,
      min(timestamp) AS min_timestamp,
      max(timestamp) AS max_timestamp,
      toUInt64(count()) AS event_count,
      toUInt64(countIf(event = '$pageview')) AS pageview_count,
      argMinIfState(current_url, timestamp, current_url != '') AS entry_url,
      argMaxIfState(current_url, timestamp, current_url != '') AS exit_url
    FROM ${db.table("events")}
    WHERE session_id != ''
    GROUP BY session_id`,
  ];
  for (const statement of statements) await db.command(statement);
}
