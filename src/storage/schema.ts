import type { ClickHouse } from "./clickhouse";
import { literal } from "./sql";

/** A table this service owns: its columns (name → type as ClickHouse reports it) and the rest of its DDL. */
interface TableSpec {
  readonly name: string;
  readonly columns: Readonly<Record<string, string>>;
  /** Everything after the column list: indexes, engine, keys. */
  readonly definition: string;
  readonly indexes?: readonly string[];
}

const UTC_MICROS = "DateTime64(6, 'UTC')";

/**
 * Persons and links are read by key, a few dozen at a time; a read decompresses every granule that holds a key,
 * so granules of 1,024 rows instead of 8,192 halve a 32-person read at 1,000,000 persons.
 * Takes effect for tables created from now on; ClickHouse cannot change it on an existing table.
 */
const POINT_LOOKUPS = "SETTINGS index_granularity = 1024";

/**
 * - `events` follows PostHog's layout. ReplacingMergeTree on a key that ends in the event's uuid, so a retried
 *   event (same uuid, timestamp, name and distinct ID) collapses to one row; the newest copy wins.
 * - `persons` and `person_distinct_ids` keep every version and collapse to the highest `version` (FINAL, or
 *   argMax). `is_deleted` is a plain column, so a merged-away person still shows in FINAL, marked deleted.
 *   The bloom filter finds a person's distinct IDs without scanning the table (needed for merges).
 * - `identity_facts` holds what events said about distinct IDs (identity/facts.ts), read by distinct ID; rows of
 *   one fact collapse as its columns' functions say, so merges shrink it and never change what it says.
 * - `sessions` is kept by a materialized view over events that carry `$session_id`. Counts are exact sets of
 *   event uuids (uniqExact), so an event that arrives twice is counted once; the other columns are min/max and
 *   first/last values, which a repeat cannot change. Read it with the -Merge combinators grouped by `session_id`.
 */
export const TABLES: readonly TableSpec[] = [
  {
    name: "events",
    columns: {
      uuid: "UUID",
      event: "String",
      properties: "String",
      timestamp: UTC_MICROS,
      distinct_id: "String",
      person_id: "UUID",
      session_id: "String",
      window_id: "String",
      current_url: "String",
      host: "String",
      created_at: UTC_MICROS,
    },
    definition: `ENGINE = ReplacingMergeTree(created_at)
    PARTITION BY toYYYYMM(timestamp)
    ORDER BY (toDate(timestamp), event, cityHash64(distinct_id), cityHash64(uuid))`,
  },
  {
    name: "persons",
    columns: {
      id: "UUID",
      distinct_id: "String",
      properties: "String",
      is_identified: "UInt8",
      is_deleted: "UInt8",
      created_at: UTC_MICROS,
      version: "UInt64",
    },
    definition: `ENGINE = ReplacingMergeTree(version) ORDER BY id ${POINT_LOOKUPS}`,
  },
  {
    name: "person_distinct_ids",
    columns: { distinct_id: "String", person_id: "UUID", is_deleted: "UInt8", version: "UInt64" },
    indexes: ["INDEX person_id_index person_id TYPE bloom_filter GRANULARITY 1"],
    definition: `ENGINE = ReplacingMergeTree(version) ORDER BY distinct_id ${POINT_LOOKUPS}`,
  },
  {
    name: "identity_facts",
    columns: {
      distinct_id: "String",
      kind: "Enum8('born' = 1, 'joined' = 2, 'identified' = 3, 'property' = 4)",
      name: "String",
      at: `SimpleAggregateFunction(min, Tuple(${UTC_MICROS}, UInt64))`,
      last_write: `SimpleAggregateFunction(max, Tuple(UInt8, ${UTC_MICROS}, UInt64, UInt8, String))`,
      first_once: `SimpleAggregateFunction(min, Tuple(UInt8, ${UTC_MICROS}, UInt64, String))`,
      last_once: `SimpleAggregateFunction(max, Tuple(UInt8, ${UTC_MICROS}, UInt64, String))`,
      writes: "SimpleAggregateFunction(sum, UInt64)",
    },
    definition: `ENGINE = AggregatingMergeTree ORDER BY (distinct_id, kind, name) ${POINT_LOOKUPS}`,
  },
  {
    name: "sessions",
    columns: {
      session_id: "String",
      distinct_id: `AggregateFunction(argMin, String, ${UTC_MICROS})`,
      min_timestamp: `SimpleAggregateFunction(min, ${UTC_MICROS})`,
      max_timestamp: `SimpleAggregateFunction(max, ${UTC_MICROS})`,
      event_count: "AggregateFunction(uniqExact, UUID)",
      pageview_count: "AggregateFunction(uniqExact, UUID)",
      entry_url: `AggregateFunction(argMin, String, ${UTC_MICROS})`,
      exit_url: `AggregateFunction(argMax, String, ${UTC_MICROS})`,
    },
    definition: "ENGINE = AggregatingMergeTree ORDER BY session_id",
  },
];

/** The database does not hold the tables this service writes, in a way it will not repair by itself. */
export class SchemaError extends Error {
  override name = "SchemaError";
}

/**
 * Creates the database, tables and the sessions view if they are missing, then checks what exists: a missing
 * column is added (safe: it only gets its default in old rows); a column of another type is a `SchemaError`
 * naming the table, because writing on would silently lose or mangle data. Extra columns are left alone.
 * Safe to run at every start.
 */
export async function createSchema(db: ClickHouse, onRepair: RepairObserver = warnRepair): Promise<void> {
  await db.command(`CREATE DATABASE IF NOT EXISTS \`${db.database}\``);
  for (const table of TABLES) {
    const columns = Object.entries(table.columns).map(([name, type]) => `${name} ${type}`);
    await db.command(
      `CREATE TABLE IF NOT EXISTS ${db.table(table.name)} (${[...columns, ...(table.indexes ?? [])].join(", ")}) ${table.definition}`,
    );
  }
  await db.command(
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db.table("sessions_mv")} TO ${db.table("sessions")} AS
    SELECT
      session_id,
      argMinState(distinct_id, timestamp) AS distinct_id,
      min(timestamp) AS min_timestamp,
      max(timestamp) AS max_timestamp,
      uniqExactState(uuid) AS event_count,
      uniqExactIfState(uuid, event = '$pageview') AS pageview_count,
      argMinIfState(current_url, timestamp, current_url != '') AS entry_url,
      argMaxIfState(current_url, timestamp, current_url != '') AS exit_url
    FROM ${db.table("events")}
    WHERE session_id != ''
    GROUP BY session_id`,
  );
  await checkColumns(db, onRepair);
}

/** Told of each column the schema check added. */
export type RepairObserver = (table: string, column: string, type: string) => void;

const warnRepair: RepairObserver = (table, column, type) =>
  console.warn(`Schema: ${table} had no column ${column}; adding it as ${type}.`);

async function checkColumns(db: ClickHouse, onRepair: RepairObserver): Promise<void> {
  const rows = await db.rows<{ table: string; name: string; type: string }>(
    `SELECT table, name, type FROM system.columns WHERE database = ${literal(db.database)}`,
  );
  for (const table of TABLES) {
    const existing = new Map(rows.filter((row) => row.table === table.name).map((row) => [row.name, row.type]));
    for (const [name, type] of Object.entries(table.columns)) {
      const found = existing.get(name);
      if (found === undefined) {
        onRepair(db.table(table.name), name, type);
        await db.command(`ALTER TABLE ${db.table(table.name)} ADD COLUMN IF NOT EXISTS ${name} ${type}`);
      } else if (found !== type) {
        throw new SchemaError(
          `Table ${db.table(table.name)} has column ${name} of type ${found}, but this service writes ${type}: ` +
            "migrate or drop the table (or set CLICKHOUSE_DATABASE to another database) and start again.",
        );
      }
    }
  }
}
