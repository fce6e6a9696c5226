import { GEO_PROPERTIES } from "../../src/contract";
import { AUTOMATIC_KEYS, initialKey } from "../../src/identity/automatic";
import type { ClickHouse } from "../../src/storage/clickhouse";
import { literal } from "../../src/storage/sql";
import type { EventRow } from "../../src/write/rows";

/** An events row as read back: the row the service wrote, with timestamps as ClickHouse prints them. */
export type StoredEvent = Omit<EventRow, "properties" | "timestamp" | "created_at"> & {
  properties: string;
  timestamp: string;
  created_at: string;
};

export interface StoredPerson {
  id: string;
  distinct_id: string;
  properties: Record<string, unknown>;
  is_identified: number;
  is_deleted: number;
  created_at: string;
  version: number;
}

export interface StoredLink {
  distinct_id: string;
  person_id: string;
  is_deleted: number;
  version: number;
}

/** Events in the order they were sent (by timestamp, then uuid). Use `final` to read them deduplicated. */
export async function events(db: ClickHouse, { final = false } = {}): Promise<StoredEvent[]> {
  return db.rows<StoredEvent>(
    `SELECT toString(uuid) AS uuid, event, properties, toString(timestamp) AS timestamp, distinct_id,
       toString(person_id) AS person_id, session_id, window_id, current_url, host, toString(created_at) AS created_at
     FROM ${db.table("events")} ${final ? "FINAL" : ""} ORDER BY timestamp, uuid`,
  );
}

/** `persons FINAL`: the latest version of every person. */
export async function persons(db: ClickHouse): Promise<Map<string, StoredPerson>> {
  const rows = await db.rows<Omit<StoredPerson, "properties"> & { properties: string }>(
    `SELECT toString(id) AS id, distinct_id, properties, is_identified, is_deleted, toString(created_at) AS created_at,
       toString(version) AS version
     FROM ${db.table("persons")} FINAL`,
  );
  return new Map(
    rows.map((row) => [
      row.id,
      {
        ...row,
        properties: JSON.parse(row.properties),
        is_identified: Number(row.is_identified),
        is_deleted: Number(row.is_deleted),
        version: Number(row.version),
      },
    ]),
  );
}

/** `person_distinct_ids FINAL`: every distinct ID's current link. */
export async function links(db: ClickHouse): Promise<Map<string, StoredLink>> {
  const rows = await db.rows<StoredLink>(
    `SELECT distinct_id, toString(person_id) AS person_id, is_deleted, toString(version) AS version
     FROM ${db.table("person_distinct_ids")} FINAL`,
  );
  return new Map(
    rows.map((row) => [row.distinct_id, { ...row, is_deleted: Number(row.is_deleted), version: Number(row.version) }]),
  );
}

/** The live person a distinct ID resolves to, read the way an analyst would: link FINAL, then person FINAL. */
export async function personOf(db: ClickHouse, distinctId: string): Promise<StoredPerson | undefined> {
  const link = (await links(db)).get(distinctId);
  return link && (await persons(db)).get(link.person_id);
}

export async function count(db: ClickHouse, table: string, where = "1", { final = false } = {}): Promise<number> {
  const [row] = await db.rows<{ n: string | number }>(
    `SELECT count() AS n FROM ${db.table(table)} ${final ? "FINAL" : ""} WHERE ${where}`,
  );
  return Number(row!.n);
}

/** The statement that would create `table` as it is now, settings included. */
export async function createTableQuery(db: ClickHouse, table: string): Promise<string> {
  const [row] = await db.rows<{ query: string }>(
    `SELECT create_table_query AS query FROM system.tables WHERE database = ${literal(db.database)} AND name = ${literal(table)}`,
  );
  return row?.query ?? "";
}

/** A person's properties without PostHog's automatic ones (`$browser`, `utm_source`, `$geoip_*`, their `$initial_*`). */
export function withoutAutomatic(properties: Record<string, unknown>): Record<string, unknown> {
  const automatic = new Set([...AUTOMATIC_KEYS, ...GEO_PROPERTIES].flatMap((key) => [key, initialKey(key)]));
  return Object.fromEntries(Object.entries(properties).filter(([key]) => !automatic.has(key)));
}
