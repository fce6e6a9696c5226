import { OperatorError } from "../config";
import { distinctIdFrom } from "../contract";
import { personsOf } from "../identity";
import { type ClickHouse, literal, literalList } from "../storage";
import { FORGOTTEN_TABLES, type ForgottenTable } from "../telemetry";

// What `ingest forget` finds before it removes anything (docs/operations.md#forgetting-persons); forget.ts removes it.

/** What erasing the persons of some distinct IDs takes: the rows found, before anything is removed. */
export interface Erasure {
  /** Every distinct ID of theirs, and every person id their IDs and events have had. */
  readonly ids: readonly string[];
  readonly personIds: readonly string[];
  /** How many of those person ids have rows in `persons`. */
  readonly persons: number;
  /** The partitions (months) of `events` that hold their events, and the sessions those were in. */
  readonly partitions: readonly string[];
  readonly sessions: readonly string[];
  /** Stored rows each table holds of theirs. */
  readonly rows: Readonly<Record<ForgottenTable, number>>;
}

/**
 * Finds everything of the persons of the distinct IDs `asked` (docs/operations.md#forgetting-persons): every ID
 * and person id of theirs, their events' partitions and sessions, and how many rows each table holds of them.
 * When an ID asked for has no person and no event (no link, no fact, no event), the IDs that have none.
 */
export async function planErasure(
  db: ClickHouse,
  asked: readonly string[],
): Promise<Erasure | { readonly unknown: readonly string[] }> {
  if (db.cluster !== undefined) throw new OperatorError(CLUSTER_REFUSED);
  // a database that lacks one of the tables (never opened by a service) has nobody to forget
  const [present] = await db.rows<{ n: number | string }>(
    `SELECT count() AS n FROM system.tables
     WHERE database = ${literal(db.database)} AND name IN ${literalList(FORGOTTEN_TABLES)}`,
  );
  if (Number(present?.n ?? 0) < FORGOTTEN_TABLES.length) return { unknown: asked };
  // as the service keys them: a longer ID sent was stored cut to the column's length
  const keys = [...new Set(asked.map((id) => distinctIdFrom(id) ?? id))];
  const found = await personsOf(db, keys);
  // an ID with events but no link or fact is one a forget that failed part-way left: forgetting it finishes that
  const unknown = await withoutEvents(db, found.unknown);
  if (unknown.length > 0) return { unknown };
  const ids = [...found.ids];
  // an event is stored with a person its ID has had: a person id one of their events carries is theirs
  const personIds = [...new Set([...found.personIds, ...(await eventPersons(db, ids))])];
  const { partitions, sessions, events } = await eventsOf(db, personIds);
  return {
    ids,
    personIds,
    persons: await personsWithRows(db, personIds),
    partitions,
    sessions,
    rows: {
      events,
      sessions: await count(db, "sessions", "session_id", sessions),
      persons: await count(db, "persons", "id", personIds),
      person_overrides: await count(db, "person_overrides", "old_person_id", personIds),
      identity_facts: await count(db, "identity_facts", "distinct_id", ids),
      person_distinct_ids: await count(db, "person_distinct_ids", "distinct_id", ids),
    },
  };
}

/** Why a cluster is refused: its events and sessions are on each shard, which these statements do not reach. */
export const CLUSTER_REFUSED =
  "ingest forget does not work on a cluster (CLICKHOUSE_CLUSTER) yet: its events and sessions are spread over the " +
  "shards; see docs/operations.md#forgetting-persons for the statements to run on each.";

/** Those of `ids` that no event has. */
async function withoutEvents(db: ClickHouse, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db.rowsIn<{ distinct_id: string }>(
    ids,
    (list) => `SELECT DISTINCT distinct_id FROM ${db.table("events")} WHERE distinct_id IN ${list}`,
  );
  const found = new Set(rows.map((row) => row.distinct_id));
  return ids.filter((id) => !found.has(id));
}

/** The person ids the events of `ids` were stored with. */
async function eventPersons(db: ClickHouse, ids: readonly string[]): Promise<string[]> {
  const rows = await db.rowsIn<{ person: string }>(
    ids,
    (list) => `SELECT DISTINCT toString(person_id) AS person FROM ${db.table("events")} WHERE distinct_id IN ${list}`,
  );
  return rows.map((row) => row.person);
}

/** The events of `personIds`: how many are stored, the partitions they are in, and the sessions they were in. */
async function eventsOf(
  db: ClickHouse,
  personIds: readonly string[],
): Promise<{ events: number; partitions: string[]; sessions: string[] }> {
  const rows = await db.rowsIn<{ part_id: string; session: string; n: number | string }>(
    personIds,
    (list) => `SELECT _partition_id AS part_id, session_id AS session, count() AS n
      FROM ${db.table("events")} WHERE person_id IN ${list} GROUP BY part_id, session`,
  );
  return {
    events: rows.reduce((sum, row) => sum + Number(row.n), 0),
    partitions: [...new Set(rows.map((row) => row.part_id))].sort(),
    sessions: [...new Set(rows.map((row) => row.session))].filter((session) => session !== ""),
  };
}

/** Rows of `table` whose `column` is one of `values`. */
async function count(db: ClickHouse, table: string, column: string, values: readonly string[]): Promise<number> {
  const rows = await db.rowsIn<{ n: number | string }>(
    values,
    (list) => `SELECT count() AS n FROM ${db.table(table)} WHERE ${column} IN ${list}`,
  );
  return rows.reduce((sum, row) => sum + Number(row.n), 0);
}

/** How many of `personIds` have a row in `persons` (the others are ids their IDs would have had, or had merged). */
async function personsWithRows(db: ClickHouse, personIds: readonly string[]): Promise<number> {
  const rows = await db.rowsIn<{ n: number | string }>(
    personIds,
    (list) => `SELECT uniqExact(id) AS n FROM ${db.table("persons")} WHERE id IN ${list}`,
  );
  return rows.reduce((sum, row) => sum + Number(row.n), 0);
}
