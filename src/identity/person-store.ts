import type { Timestamp } from "../contract";
import type { ClickHouse } from "../storage";
import { chunkByBytes, literal, literalList } from "../storage";
import { compareTuples, type FactRow, type FirstOnce, oncePrefix } from "./facts";
import type { OnceRequest } from "./gather";
import type { Link, Person } from "./person";

// The SQL that reads facts, links and persons (./rows.ts has the rows that write them). ClickHouse lets an alias
// shadow a column of the same name, in WHERE and inside aggregates too, so no alias below reuses a column name.

interface LinkRecord {
  distinct_id: string;
  person: string;
  latest_version: string | number;
}

/**
 * The current links of the distinct IDs that `where` selects, grouped by distinct ID. A deleted link is no link.
 */
function linksQuery(db: ClickHouse, where: string): string {
  return `SELECT distinct_id, toString(argMax(person_id, version)) AS person, max(version) AS latest_version
    FROM ${db.table("person_distinct_ids")}
    WHERE ${where}
    GROUP BY distinct_id
    HAVING argMax(is_deleted, version) = 0`;
}

/** The current links of these distinct IDs; deleted and unknown IDs are absent. */
export async function loadLinks(db: ClickHouse, distinctIds: readonly string[]): Promise<Map<string, Link>> {
  return toLinks(await db.rowsIn<LinkRecord>(distinctIds, (ids) => linksQuery(db, `distinct_id IN ${ids}`)));
}

/** Every current link, a page at a time in distinct ID order (distinct IDs are never empty: the first is after ""). */
export async function* allLinks(db: ClickHouse, pageSize: number): AsyncGenerator<Map<string, Link>> {
  const query = (after: string) => `${linksQuery(db, `distinct_id > ${literal(after)}`)} ORDER BY distinct_id`;
  for (let after = ""; ; ) {
    // in key order, so a page costs its own rows rather than the rest of the table
    const rows = await db.rows<LinkRecord>(`${query(after)} LIMIT ${Math.trunc(pageSize)}`, {
      optimize_aggregation_in_order: 1,
    });
    yield toLinks(rows);
    if (rows.length < pageSize) return;
    after = rows.at(-1)!.distinct_id;
  }
}

function toLinks(rows: readonly LinkRecord[]): Map<string, Link> {
  return new Map(rows.map((row) => [row.distinct_id, linkOf(row)]));
}

/** A link as its record reads it. */
const linkOf = (row: Pick<LinkRecord, "person" | "latest_version">): Link => ({
  personId: row.person,
  version: Number(row.latest_version),
});

/** 64-bit integers come as numbers from chDB and as strings from a server. */
type Int64 = number | string;

interface FactRecord {
  distinct_id: string;
  kind: FactRow["kind"];
  name: string;
  first_at: [Timestamp, Int64];
  latest_write: [0 | 1, Timestamp, Int64, 0 | 1, string];
  earliest_once: [0 | 1, Timestamp, Int64, string];
  latest_once: [0 | 1, Timestamp, Int64, string];
  rows_written: Int64;
}

/** A fact's columns, each collapsed as the table collapses it (facts.ts), of the IDs that `where` selects. */
function factsQuery(db: ClickHouse, where: string): string {
  return `SELECT distinct_id, kind, name, min(at) AS first_at, max(last_write) AS latest_write,
       min(first_once) AS earliest_once, max(last_once) AS latest_once, sum(writes) AS rows_written
     FROM ${db.table("identity_facts")} WHERE ${where} GROUP BY distinct_id, kind, name`;
}

function toFact(row: FactRecord): FactRow {
  return {
    distinct_id: row.distinct_id,
    kind: row.kind,
    name: row.name,
    at: [row.first_at[0], Number(row.first_at[1])],
    last_write: [
      row.latest_write[0],
      row.latest_write[1],
      Number(row.latest_write[2]),
      row.latest_write[3],
      row.latest_write[4],
    ],
    first_once: [row.earliest_once[0], row.earliest_once[1], Number(row.earliest_once[2]), row.earliest_once[3]],
    last_once: [row.latest_once[0], row.latest_once[1], Number(row.latest_once[2]), row.latest_once[3]],
    writes: Number(row.rows_written),
  };
}

/** A row of `loadNeighbourhood`: an ID's link, or one of its facts, or both (either side empty when absent). */
type NeighbourRecord = LinkRecord & FactRecord & { link_id: string };

/**
 * In one round trip: the current links of these distinct IDs and of every ID that was ever on a person one of them
 * was ever on, and the facts of all those IDs. Those all belong to one person with them (a link only ever points at
 * a person derived from facts that join its ID to the others), so a person's IDs are found in one read rather than
 * by following its `joined` facts one hop at a time. The bloom filter index on `person_id` narrows the scan for
 * the persons' IDs to their granules.
 */
export async function loadNeighbourhood(
  db: ClickHouse,
  distinctIds: readonly string[],
): Promise<{ readonly links: Map<string, Link>; readonly facts: FactRow[] }> {
  const table = db.table("person_distinct_ids");
  const query = (ids: string) => `WITH
      frontier AS (SELECT arrayJoin([${ids.slice(1, -1)}]) AS distinct_id),
      sharing AS (SELECT distinct_id FROM ${table}
        WHERE person_id IN (SELECT person_id FROM ${table} WHERE distinct_id IN frontier))
    SELECT l.distinct_id AS link_id, l.person AS person, l.latest_version AS latest_version,
      f.distinct_id AS distinct_id, f.kind AS kind, f.name AS name, f.first_at AS first_at,
      f.latest_write AS latest_write, f.earliest_once AS earliest_once, f.latest_once AS latest_once,
      f.rows_written AS rows_written
    FROM (${linksQuery(db, "distinct_id IN sharing")}) AS l
    FULL OUTER JOIN (${factsQuery(db, "(distinct_id IN frontier OR distinct_id IN sharing) AND kind != 'once'")}) AS f
      ON f.distinct_id = l.distinct_id`;
  const links = new Map<string, Link>();
  const facts: FactRow[] = [];
  // A long list is read a chunk at a time (`max_query_size`), and chunks overlap: an ID that shares a person with
  // IDs of two chunks is in the `sharing` of both, and each returns all its facts. Counted twice, they would raise
  // the person's and links' versions above what its facts give (and above what every later flush derives, which
  // then loses to them), so an ID's facts are taken from the first chunk that has any.
  const taken = new Set<string>();
  for (const chunk of chunkByBytes(distinctIds)) {
    const rows = await db.rows<NeighbourRecord>(query(literalList(chunk)));
    const found = new Set<string>();
    for (const row of rows) {
      // an absent side reads as its columns' defaults (join_use_nulls is 0): empty IDs, which are never a real one
      if (row.link_id !== "") links.set(row.link_id, linkOf(row));
      if (row.distinct_id === "" || taken.has(row.distinct_id)) continue;
      found.add(row.distinct_id);
      facts.push(toFact(row));
    }
    for (const id of found) taken.add(id);
  }
  return { links, facts };
}

/**
 * For each request, the earliest `$set_once` of its key by any of its IDs after its `after` (undefined if none),
 * read from the `once` facts (facts.ts). A request a round trip: they come only after an `$unset`.
 */
export async function loadOnces(db: ClickHouse, requests: readonly OnceRequest[]): Promise<(FirstOnce | undefined)[]> {
  const found: (FirstOnce | undefined)[] = [];
  for (const { ids, key, after } of requests) {
    const query = (list: string) =>
      `SELECT min(first_once) AS earliest, count() AS onces FROM ${db.table("identity_facts")}
       WHERE kind = 'once' AND distinct_id IN ${list} AND startsWith(name, ${literal(oncePrefix(key))})
         AND (tupleElement(first_once, 2), tupleElement(first_once, 3))
           > (toDateTime64(${literal(after[0])}, 6, 'UTC'), ${after[1]})`;
    let earliest: FirstOnce | undefined;
    for (const row of await db.rowsIn<{ earliest: [0 | 1, Timestamp, Int64, string]; onces: Int64 }>(ids, query)) {
      if (Number(row.onces) === 0) continue;
      const once: FirstOnce = [row.earliest[0], row.earliest[1], Number(row.earliest[2]), row.earliest[3]];
      if (earliest === undefined || compareTuples(once, earliest) < 0) earliest = once;
    }
    found.push(earliest);
  }
  return found;
}

interface PersonRecord {
  person: string;
  primary_id: string;
  props: string;
  identified: number;
  deleted: number;
  created: Timestamp;
  latest_version: string | number;
}

/** The latest version of each of these persons; unknown ones are absent. */
export async function loadPersons(db: ClickHouse, personIds: readonly string[]): Promise<Map<string, Person>> {
  const query = (ids: string) =>
    `SELECT toString(id) AS person, argMax(distinct_id, version) AS primary_id, argMax(properties, version) AS props,
       argMax(is_identified, version) AS identified, argMax(is_deleted, version) AS deleted,
       toString(argMax(created_at, version)) AS created, max(version) AS latest_version
     FROM ${db.table("persons")} WHERE id IN ${ids} GROUP BY id`;
  const rows = await db.rowsIn<PersonRecord>(personIds, query);
  return new Map(
    rows.map((row) => [
      row.person,
      {
        id: row.person,
        distinctId: row.primary_id,
        properties: row.props,
        isIdentified: Number(row.identified) === 1,
        isDeleted: Number(row.deleted) === 1,
        createdAt: row.created,
        version: Number(row.latest_version),
      },
    ]),
  );
}

/** The highest stored version of each of these persons; unknown ones are absent. */
export function personVersions(db: ClickHouse, personIds: readonly string[]): Promise<Map<string, number>> {
  return latestVersions(db, "persons", "id", personIds);
}

/** The highest stored version of the override of each of these persons; persons never merged away are absent. */
export function overrideVersions(db: ClickHouse, personIds: readonly string[]): Promise<Map<string, number>> {
  return latestVersions(db, "person_overrides", "old_person_id", personIds);
}

/** The highest stored `version` of the rows of `table` whose UUID column `key` holds each of `ids`. */
async function latestVersions(
  db: ClickHouse,
  table: string,
  key: string,
  ids: readonly string[],
): Promise<Map<string, number>> {
  const query = (list: string) =>
    `SELECT toString(${key}) AS person, max(version) AS latest_version FROM ${db.table(table)}
     WHERE ${key} IN ${list} GROUP BY ${key}`;
  const rows = await db.rowsIn<{ person: string; latest_version: Int64 }>(ids, query);
  return new Map(rows.map((row) => [row.person, Number(row.latest_version)]));
}

/**
 * Fills `person_overrides` from the persons and links of a database written before it existed, once: a person
 * written deleted was merged into the person the distinct ID it was born to links to now. Does nothing when
 * the table holds any row (counted from the parts' own row counts), or no person row was ever written deleted
 * (a scan of one byte column that stops at the first): so a start pays for the fill only on the database it fills.
 */
export async function fillOverrides(db: ClickHouse): Promise<void> {
  const [held] = await db.rows<{ n: Int64 }>(`SELECT count() AS n FROM ${db.table("person_overrides")}`);
  if (Number(held?.n ?? 0) > 0) return;
  const deleted = await db.rows(`SELECT 1 FROM ${db.table("persons")} WHERE is_deleted = 1 LIMIT 1`);
  if (deleted.length === 0) return;
  const persons = db.table("persons");
  const links = db.table("person_distinct_ids");
  const merged = `SELECT id, argMax(distinct_id, version) AS born_to, max(version) AS latest_version
    FROM ${persons} GROUP BY id HAVING argMax(is_deleted, version) = 1`;
  const current = `SELECT distinct_id, argMax(person_id, version) AS now_on FROM ${links}
    GROUP BY distinct_id HAVING argMax(is_deleted, version) = 0`;
  await db.command(`INSERT INTO ${db.table("person_overrides")} (old_person_id, override_person_id, version, written_at)
    SELECT m.id, c.now_on, m.latest_version, now64(3) FROM (${merged}) AS m JOIN (${current}) AS c ON c.distinct_id = m.born_to
    WHERE c.now_on != m.id`);
}

/** When the latest fact was written (`written_at`, milliseconds); undefined when none has a time. */
export async function latestFactWrite(db: ClickHouse): Promise<number | undefined> {
  const [row] = await db.rows<{ latest: Int64 }>(
    `SELECT toUnixTimestamp64Milli(max(written_at)) AS latest FROM ${db.table("identity_facts")}`,
  );
  const latest = Number(row?.latest ?? 0);
  return latest > 0 ? latest : undefined;
}

/** Where a sweep stands in a backlog: after the ID `id`, whose facts were last written at `at` (milliseconds). */
export interface SweepCursor {
  readonly at: number;
  readonly id: string;
}

/**
 * The distinct IDs whose facts were written after `after` and up to `upTo` (milliseconds), the earliest written
 * first (by their latest write, then ID), past `cursor` if given, at most `limit`; with where the last one stands.
 */
export async function factsWrittenBetween(
  db: ClickHouse,
  after: number,
  upTo: number,
  limit: number,
  cursor?: SweepCursor,
): Promise<{ readonly ids: string[]; readonly last: SweepCursor | undefined }> {
  const past =
    cursor === undefined ? "" : `HAVING (latest, distinct_id) > (${Math.trunc(cursor.at)}, ${literal(cursor.id)})`;
  const rows = await db.rows<{ distinct_id: string; latest: Int64 }>(
    `SELECT distinct_id, toUnixTimestamp64Milli(max(written_at)) AS latest FROM ${db.table("identity_facts")}
     WHERE written_at > fromUnixTimestamp64Milli(${Math.trunc(after)}, 'UTC')
       AND written_at <= fromUnixTimestamp64Milli(${Math.trunc(upTo)}, 'UTC')
     GROUP BY distinct_id ${past} ORDER BY latest, distinct_id LIMIT ${Math.trunc(limit)}`,
  );
  const lastRow = rows.at(-1);
  return {
    ids: rows.map((row) => row.distinct_id),
    last: lastRow === undefined ? undefined : { at: Number(lastRow.latest), id: lastRow.distinct_id },
  };
}

/** Those of `ids` with a fact written after `after` (milliseconds): a flush may still be writing what they lead to. */
export async function writtenAfter(db: ClickHouse, ids: readonly string[], after: number): Promise<Set<string>> {
  const query = (list: string) =>
    `SELECT DISTINCT distinct_id FROM ${db.table("identity_facts")}
     WHERE distinct_id IN ${list} AND written_at > fromUnixTimestamp64Milli(${Math.trunc(after)}, 'UTC')`;
  return new Set((await db.rowsIn<{ distinct_id: string }>(ids, query)).map((row) => row.distinct_id));
}
