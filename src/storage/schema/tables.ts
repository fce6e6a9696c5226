import { literal, quoteIdentifier, tableName } from "../sql";
import { EVENTS_PARTITION } from "./partition";
import { type MaterializedColumn, personPropertyColumns, propertyColumns, TYPED_PROPERTIES } from "./properties";
import { SESSION_COLUMNS, sessionsView, UTC_MICROS } from "./sessions";

/**
 * Where a table's rows live on a cluster (`CLICKHOUSE_CLUSTER`; docs/scale-out.md#clusters). On one server every
 * table is a plain one of its name.
 * - `everywhere`: one table a node, all replicas of each other, so identity lookups read the node they ask;
 * - `sharded`: a table a node named `<name>_local`, replicated within its shard, behind a `Distributed` table of
 *   the name that spreads inserts by `by` (none: nothing inserts through it) and reads every shard.
 */
type Placement = { readonly kind: "everywhere" } | { readonly kind: "sharded"; readonly by?: string };

/** A table this service owns: its columns (name → type as ClickHouse reports it), engine and keys. */
interface TableSpec {
  readonly name: string;
  readonly columns: Readonly<Record<string, string>>;
  readonly indexes?: readonly string[];
  readonly engine: "ReplacingMergeTree" | "AggregatingMergeTree";
  /** The engine's own arguments (ReplacingMergeTree's version column). */
  readonly engineArgs?: string;
  /** Everything after the engine: partitioning, sorting key, settings. */
  readonly keys: string;
  readonly placement: Placement;
}

/**
 * Persons and links are read by key, a few dozen at a time; a read decompresses every granule that holds a key,
 * so granules of 1,024 rows instead of 8,192 halve a 32-person read at 1,000,000 persons.
 * Takes effect for tables created from now on; ClickHouse cannot change it on an existing table.
 */
const POINT_LOOKUPS = "SETTINGS index_granularity = 1024";

/**
 * - `events` follows PostHog's layout. ReplacingMergeTree on a key that ends in the event's uuid, so a retried
 *   event (same uuid, timestamp, name and distinct ID) collapses to one row; the newest copy wins. On a cluster
 *   it is sharded by distinct ID, so a retried event lands on the shard that holds its first copy. `geoip` holds
 *   the location PostHog would add to `properties` (a JSON object; `events_resolved` adds it there): events from
 *   one address share it, so a LowCardinality column stores it once a part, where `properties` would carry its
 *   ~130 bytes in every row through every insert and merge. `mat_<key>` (`MATERIALIZED_PROPERTIES`,
 *   properties.ts) hold the values of the property keys queries read most, as text, and `properties_typed`
 *   (`TYPED_PROPERTIES=1`) is `properties` parsed into the engine's JSON type as each row is inserted: a subcolumn
 *   a key, typed. Either way a query reads the keys it names instead of parsing every row's text
 *   (docs/analytics.md#property-columns). `person_properties` and
 *   `person_created_at` (`PERSONS_ON_EVENTS=1`; else empty) are the event's person as its flush left it, as
 *   PostHog stores them: a breakdown by a person property reads no other table, and `pmat_<key>`
 *   (`MATERIALIZED_PERSON_PROPERTIES`) holds a key of them as `mat_<key>` holds one of `properties`. Partitions
 *   are UTC days (`EVENTS_PARTITION`; months in tables made before schema version 10): a day no longer written to
 *   settles into one part, which `FINAL` reads as it is (write/settle.ts), and retention drops days whole.
 * - `persons` and `person_distinct_ids` keep every version and collapse to the highest `version` (FINAL, or
 *   argMax). `is_deleted` is a plain column, so a merged-away person still shows in FINAL, marked deleted.
 *   The bloom filter finds a person's distinct IDs without scanning the table (needed for merges).
 * - `identity_facts` holds what events said about distinct IDs (identity/facts.ts), read by distinct ID; rows of
 *   one fact collapse as its columns' functions say, so merges shrink it and never change what it says.
 *   `written_at` (when its latest row was written; 1970 for rows written before 0.2.0) is what the repair sweep
 *   reads facts by (identity/repair.ts).
 * - `person_overrides` says where the events of each merged-away person belong now: always a live person (a
 *   merge, or a survivor that changes, writes every merged-away person of the component anew), read with FINAL.
 *   `written_at` is when the row was written (1970 for rows written before schema version 9). `person_squashes`
 *   records each time the events of the persons merged away by overrides written before `squashed_before` were
 *   rewritten to their person (write/squash.ts). `events_resolved` is `events` with each event's person read
 *   through the overrides written since (docs/identity.md#events-and-merges).
 * - `group_facts` holds what `$groupidentify` events said of each group: per property key, its latest value (by
 *   event timestamp; the value settles a tie) and how many rows said so; the key `""` marks that the group exists.
 *   `groups` is derived from them (identity/groups.ts), one row a version, read with FINAL.
 * - `sessions` is kept by a materialized view over events that carry `$session_id`. Counts are sets of the
 *   hashes of event uuids (`uniq`, sessions.ts), so an event that arrives twice is counted once; the other columns
 *   are min/max and first/last values, which a repeat cannot change. Read it with the -Merge combinators grouped by
 *   `session_id`. On a cluster each shard sums up its own events, and a read merges the shards' partial rows. It
 *   holds nothing events do not: on one server, one of an older layout is made again from them (rebuild.ts).
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
      ip: "String",
      geoip: "LowCardinality(String)",
      created_at: UTC_MICROS,
      person_properties: "String",
      person_created_at: UTC_MICROS,
    },
    engine: "ReplacingMergeTree",
    engineArgs: "created_at",
    keys: `PARTITION BY ${EVENTS_PARTITION}
    ORDER BY (toDate(timestamp), event, cityHash64(distinct_id), cityHash64(uuid))`,
    placement: { kind: "sharded", by: "cityHash64(distinct_id)" },
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
    engine: "ReplacingMergeTree",
    engineArgs: "version",
    keys: `ORDER BY id ${POINT_LOOKUPS}`,
    placement: { kind: "everywhere" },
  },
  {
    name: "person_distinct_ids",
    columns: { distinct_id: "String", person_id: "UUID", is_deleted: "UInt8", version: "UInt64" },
    indexes: ["INDEX person_id_index person_id TYPE bloom_filter GRANULARITY 1"],
    engine: "ReplacingMergeTree",
    engineArgs: "version",
    keys: `ORDER BY distinct_id ${POINT_LOOKUPS}`,
    placement: { kind: "everywhere" },
  },
  {
    name: "identity_facts",
    columns: {
      distinct_id: "String",
      kind: "Enum8('born' = 1, 'joined' = 2, 'identified' = 3, 'property' = 4, 'once' = 5, 'location' = 6)",
      name: "String",
      at: `SimpleAggregateFunction(min, Tuple(${UTC_MICROS}, UInt64))`,
      last_write: `SimpleAggregateFunction(max, Tuple(UInt8, ${UTC_MICROS}, UInt64, UInt8, String))`,
      first_once: `SimpleAggregateFunction(min, Tuple(UInt8, ${UTC_MICROS}, UInt64, String))`,
      last_once: `SimpleAggregateFunction(max, Tuple(UInt8, ${UTC_MICROS}, UInt64, String))`,
      writes: "SimpleAggregateFunction(sum, UInt64)",
      written_at: "SimpleAggregateFunction(max, DateTime64(3, 'UTC'))",
    },
    engine: "AggregatingMergeTree",
    keys: `ORDER BY (distinct_id, kind, name) ${POINT_LOOKUPS}`,
    placement: { kind: "everywhere" },
  },
  {
    name: "group_facts",
    columns: {
      group_type: "String",
      group_key: "String",
      key: "String",
      first_at: `SimpleAggregateFunction(min, ${UTC_MICROS})`,
      last_write: `SimpleAggregateFunction(max, Tuple(${UTC_MICROS}, String))`,
      writes: "SimpleAggregateFunction(sum, UInt64)",
    },
    engine: "AggregatingMergeTree",
    keys: `ORDER BY (group_type, group_key, key) ${POINT_LOOKUPS}`,
    placement: { kind: "everywhere" },
  },
  {
    name: "groups",
    columns: {
      group_type: "String",
      group_key: "String",
      properties: "String",
      created_at: UTC_MICROS,
      version: "UInt64",
    },
    engine: "ReplacingMergeTree",
    engineArgs: "version",
    keys: `ORDER BY (group_type, group_key) ${POINT_LOOKUPS}`,
    placement: { kind: "everywhere" },
  },
  {
    name: "person_overrides",
    columns: {
      old_person_id: "UUID",
      override_person_id: "UUID",
      version: "UInt64",
      written_at: "DateTime64(3, 'UTC')",
    },
    engine: "ReplacingMergeTree",
    engineArgs: "version",
    keys: `ORDER BY old_person_id ${POINT_LOOKUPS}`,
    placement: { kind: "everywhere" },
  },
  {
    name: "person_squashes",
    columns: { squashed_before: "DateTime64(3, 'UTC')", squashed_at: "DateTime64(3, 'UTC')", persons: "UInt64" },
    engine: "ReplacingMergeTree",
    keys: "ORDER BY squashed_before",
    placement: { kind: "everywhere" },
  },
  {
    name: "sessions",
    columns: SESSION_COLUMNS,
    engine: "AggregatingMergeTree",
    keys: "ORDER BY session_id",
    placement: { kind: "sharded" },
  },
];

/**
 * Keeper paths of the replicated tables (`{database}` and `{table}` are expanded when a table is created,
 * `{shard}` and `{replica}` are each node's macros). Sharded tables replicate within a shard; the identity tables
 * have one path for the whole cluster, so every node is a replica of them.
 */
export const KEEPER_PATHS = {
  sharded: "/clickhouse/tables/{shard}/{database}/{table}",
  everywhere: "/clickhouse/tables/all/{database}/{table}",
} as const;

/**
 * The events view: `events` deduplicated, each with the person its distinct ID has now, and its location among its
 * properties, as PostHog stores both (docs/identity.md#events-and-merges). What each part costs a query, measured by
 * `npm run bench queries` (bench/README.md#queries):
 *
 * - `FINAL`: an event stored twice (a retry) is read once, the newest copy, as merges will leave it. The engine
 *   merges only the ranges of the sorting key that two parts (or an unmerged part) hold: a day in one part reads as
 *   without `FINAL`, a day in several (being written, or not yet settled) is read through its key columns and
 *   merged. A copy is always in the day of its first (the partition is the date the sorting key starts with), so
 *   partitions are merged apart (`do_not_merge_across_partitions_select_final`, which recent servers decide by
 *   themselves), and the days settled into one part each (write/settle.ts) cost a query nothing.
 * - The person: an event keeps the person it was stored with until a squash rewrites it (write/squash.ts); once
 *   that person is merged away, an override names the one it went to. Only the overrides written since the last
 *   squash can name a person some event still holds, so only their persons are joined: the newest override of each
 *   (over all its rows: an older squash may have applied an earlier one), those pointing elsewhere (a survivor's
 *   points at itself), with `ANY`, since each has one row. When none was written since, the view reads `events`
 *   alone: which of the two `SELECT`s runs is decided once a query (a scalar subquery is a constant), and the other
 *   reads nothing. A join costs each event a hash probe whatever the joined table holds, which is why the view
 *   does not keep an empty one.
 * - `properties` with `geoip`'s members (which never repeat a key of `properties`, so joining the two objects'
 *   members makes one object): one copy of the text, in the place of its closing brace (`overlay`), and only for a
 *   query that reads `properties`: a view's unread columns are not computed.
 */
const eventsResolvedView = (
  events: string,
  overrides: string,
  squashes: string,
  materialized: readonly string[],
): string => {
  const located = "(e.geoip != '' AND endsWith(e.properties, '}'))";
  const members = `if(${located}, concat(if(e.properties = '{}', '', ','), substring(e.geoip, 2)), '')`;
  const columns = (personId: string) => `
      e.uuid AS uuid, e.event AS event,
      overlay(e.properties, ${members}, length(e.properties) + 1 - ${located}, ${located}) AS properties,
      e.timestamp AS timestamp,
      e.distinct_id AS distinct_id,
      ${personId} AS person_id,
      e.session_id AS session_id, e.window_id AS window_id, e.current_url AS current_url, e.host AS host,
      e.ip AS ip, e.geoip AS geoip, e.created_at AS created_at,
      e.person_properties AS person_properties, e.person_created_at AS person_created_at${materialized.map((name) => `, e.${quoteIdentifier(name)} AS ${quoteIdentifier(name)}`).join("")}`;
  const unsquashed = `${overrides} WHERE written_at >= (SELECT max(squashed_before) FROM ${squashes})`;
  const pending = `(SELECT count() FROM ${unsquashed})`;
  // the settings, outside the union, apply to both SELECTs (a view's last SELECT keeps its own to itself)
  return `SELECT * FROM (
    SELECT${columns("e.person_id")}
    FROM ${events} AS e FINAL
    WHERE ${pending} = 0
    UNION ALL
    SELECT${columns("if(empty(o.override_person_id), e.person_id, o.override_person_id)")}
    FROM ${events} AS e FINAL
    ANY LEFT JOIN (
      SELECT old_person_id, override_person_id
      FROM (
        SELECT old_person_id, argMax(override_person_id, version) AS override_person_id FROM ${overrides}
        WHERE old_person_id IN (SELECT old_person_id FROM ${unsquashed}) GROUP BY old_person_id
      )
      WHERE override_person_id != old_person_id
    ) AS o ON o.old_person_id = e.person_id
    WHERE ${pending} > 0
  )
  SETTINGS join_use_nulls = 0, do_not_merge_across_partitions_select_final = 1`;
};

/** What the schema may leave out. */
export interface SchemaOptions {
  /** `events.properties_typed` (`TYPED_PROPERTIES`); none unless said. */
  readonly typedProperties?: boolean;
  /** The property keys `events` has a column of (`MATERIALIZED_PROPERTIES`, properties.ts); none unless said. */
  readonly materializedProperties?: readonly string[];
  /** The person property keys `events` has a column of (`MATERIALIZED_PERSON_PROPERTIES`); none unless said. */
  readonly materializedPersonProperties?: readonly string[];
}

/** One object of the schema: a table (with the columns the check compares) or the view. */
export interface SchemaObject {
  readonly name: string;
  /** As `system.tables.engine` reports it. */
  readonly engine: string;
  /** A table's columns; for the view, the columns it should have (their names are what is checked). */
  readonly columns: Readonly<Record<string, string>> | undefined;
  /** A table's materialized columns, added with their expression where missing. */
  readonly materialized: Readonly<Record<string, MaterializedColumn>> | undefined;
  readonly create: string;
  /**
   * A view: made again (`CREATE OR REPLACE`) when its columns differ from `columns` or its definition from this
   * version's, rather than altered.
   */
  readonly replace: boolean;
  /**
   * A view's definition, as the comment `create` gives it: a digest of the statement, so that a view made by another
   * version (whose comment is another, or none) is made again even when its columns are the same.
   */
  readonly definition: string | undefined;
}

/** What a view's comment says of its statement (`SchemaObject.definition`). */
function definitionOf(statement: string): string {
  return `definition sha256:${new Bun.CryptoHasher("sha256").update(statement).digest("hex").slice(0, 16)}`;
}

/**
 * Every table and view this service needs in `database`, in the order they must be created: plain tables on one
 * server; on `cluster`, `ON CLUSTER` statements with replicated and distributed tables as `TableSpec.placement` says.
 */
export function schemaObjects(database: string, cluster?: string, options: SchemaOptions = {}): SchemaObject[] {
  // materialized columns are events' only, and none unless asked for
  const eventsMaterialized: Record<string, MaterializedColumn> = {
    ...(options.typedProperties && TYPED_PROPERTIES),
    ...propertyColumns(options.materializedProperties ?? []),
    ...personPropertyColumns(options.materializedPersonProperties ?? []),
  };
  const objects: SchemaObject[] = [];
  const add = (
    kind: string,
    name: string,
    engine: string,
    rest: string,
    columns?: TableSpec["columns"],
    materialized?: Readonly<Record<string, MaterializedColumn>>,
  ) => {
    const view = kind !== "TABLE";
    const statement = `CREATE ${view ? `OR REPLACE ${kind}` : "TABLE IF NOT EXISTS"} ${tableName(database, name)}${onClusterClause(cluster)} ${rest}`;
    // a view holds no data (the sessions view's rows are in `sessions`): made again when its columns are not the
    // ones it should have, or its definition not this version's (`checkColumns`)
    const definition = view ? definitionOf(statement) : undefined;
    objects.push({
      name,
      engine,
      columns,
      materialized,
      create: definition === undefined ? statement : `${statement}\n    COMMENT ${literal(definition)}`,
      replace: view,
      definition,
    });
  };
  for (const spec of TABLES) {
    const materialized = spec.name === "events" ? eventsMaterialized : undefined;
    const columns = [
      ...Object.entries(spec.columns).map(([name, type]) => `${name} ${type}`),
      ...Object.entries(materialized ?? {}).map(([name, column]) => materializedColumn(name, column)),
    ];
    const withIndexes = [...columns, ...(spec.indexes ?? [])].join(", ");
    // on a cluster: replicated, under the placement's Keeper path, and a sharded table is the shard's local part
    const sharded = cluster !== undefined && spec.placement.kind === "sharded";
    const name = sharded ? `${spec.name}_local` : spec.name;
    const engine = cluster === undefined ? spec.engine : `Replicated${spec.engine}`;
    const replication = cluster === undefined ? [] : [literal(KEEPER_PATHS[spec.placement.kind]), "'{replica}'"];
    const args = [...replication, ...(spec.engineArgs === undefined ? [] : [spec.engineArgs])].join(", ");
    const create = `(${withIndexes}) ENGINE = ${engine}(${args}) ${spec.keys}`;
    add("TABLE", name, engine, create, spec.columns, materialized);
    if (sharded && spec.placement.kind === "sharded") {
      const by = spec.placement.by === undefined ? "" : `, ${spec.placement.by}`;
      const target = [cluster, database, name].map(literal).join(", ");
      add(
        "TABLE",
        spec.name,
        "Distributed",
        `(${columns.join(", ")}) ENGINE = Distributed(${target}${by})`,
        spec.columns,
        materialized,
      );
    }
  }
  const [events, sessions] = cluster === undefined ? ["events", "sessions"] : ["events_local", "sessions_local"];
  const view = `TO ${tableName(database, sessions)} AS\n    ${sessionsView(tableName(database, events))}`;
  add("MATERIALIZED VIEW", "sessions_mv", "MaterializedView", view, SESSION_COLUMNS);
  // the view reads the events table's columns, its materialized ones included
  const eventsTable = objects.find((object) => object.name === "events")!;
  const materialized = Object.entries(eventsTable.materialized ?? {}).map(([name, { type }]) => [name, type] as const);
  const resolved = eventsResolvedView(
    tableName(database, "events"),
    tableName(database, "person_overrides"),
    tableName(database, "person_squashes"),
    materialized.map(([name]) => name),
  );
  add("VIEW", "events_resolved", "View", `AS ${resolved}`, {
    ...eventsTable.columns,
    ...Object.fromEntries(materialized),
  });
  return objects;
}

/** A materialized column's definition, as `CREATE TABLE` and `ADD COLUMN` take it. */
export function materializedColumn(name: string, { type, expression }: MaterializedColumn): string {
  return `${quoteIdentifier(name)} ${type} MATERIALIZED ${expression}`;
}

/** ` ON CLUSTER name` for a cluster's DDL; nothing on one server. */
export function onClusterClause(cluster: string | undefined): string {
  return cluster === undefined ? "" : ` ON CLUSTER ${quoteIdentifier(cluster)}`;
}
