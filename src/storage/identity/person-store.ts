import { NIL_UUID, type Timestamp } from "../../event";
import type { ClickHouse } from "../clickhouse";
import { literal } from "../sql";
import type { Link, Person } from "./person";

// The SQL that reads the latest version of persons and links (rows.ts has the rows that write new ones).
// ClickHouse lets an alias shadow a column of the same name, in WHERE and inside aggregates too, so no alias
// below reuses a column name.

interface LinkRecord {
  distinct_id: string;
  person: string;
  latest_version: string | number;
}

/**
 * The current links of the distinct IDs that `where` selects, grouped by distinct ID; `having` narrows them
 * further. A deleted link is no link.
 */
function linksQuery(db: ClickHouse, where: string, having = ""): string {
  return `SELECT distinct_id, toString(argMax(person_id, version)) AS person, max(version) AS latest_version
    FROM ${db.table("person_distinct_ids")}
    WHERE ${where}
    GROUP BY distinct_id
    HAVING argMax(is_deleted, version) = 0${having && ` AND ${having}`}`;
}

/** The current links of these distinct IDs; deleted and unknown IDs are absent. */
export async function loadLinks(db: ClickHouse, distinctIds: readonly string[]): Promise<Map<string, Link>> {
  return toLinks(await db.rowsIn<LinkRecord>(distinctIds, (ids) => linksQuery(db, `distinct_id IN ${ids}`)));
}

/** Every current link, a page at a time in distinct ID order (distinct IDs are never empty: the first is after ""). */
export async function* allLinks(db: ClickHouse, pageSize: number): AsyncGenerator<Map<string, Link>> {
  const query = (after: string) => `${linksQuery(db, `distinct_id > ${literal(after)}`)} ORDER BY distinct_id`;
  for await (const rows of pages<LinkRecord>(db, query, "", (row) => row.distinct_id, pageSize)) yield toLinks(rows);
}

/**
 * Runs the query `queryAfter` makes, which reads the rows after a key in key order, a page at a time: each page
 * resumes after the last key of the one before and reads the table in key order (`optimize_aggregation_in_order`),
 * so a page costs its own rows rather than the rest of the table.
 */
async function* pages<Row>(
  db: ClickHouse,
  queryAfter: (after: string) => string,
  first: string,
  keyOf: (row: Row) => string,
  pageSize: number,
): AsyncGenerator<Row[]> {
  for (let after = first; ; ) {
    const rows = await db.rows<Row>(`${queryAfter(after)} LIMIT ${Math.trunc(pageSize)}`, {
      optimize_aggregation_in_order: 1,
    });
    yield rows;
    if (rows.length < pageSize) return;
    after = keyOf(rows.at(-1)!);
  }
}

/**
 * Every distinct ID currently on one of these persons. The bloom filter index narrows the inner scan to the
 * persons' granules; the outer query keeps only IDs whose latest version still points at one of them.
 */
export async function loadLinksOfPersons(db: ClickHouse, personIds: readonly string[]): Promise<Map<string, Link>> {
  const table = db.table("person_distinct_ids");
  const query = (persons: string) =>
    linksQuery(
      db,
      `distinct_id IN (SELECT distinct_id FROM ${table} WHERE person_id IN ${persons})`,
      `argMax(person_id, version) IN ${persons}`,
    );
  return toLinks(await db.rowsIn<LinkRecord>(personIds, query));
}

function toLinks(rows: readonly LinkRecord[]): Map<string, Link> {
  return new Map(rows.map((row) => [row.distinct_id, { personId: row.person, version: Number(row.latest_version) }]));
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

/** The latest version of a person, from its rows grouped by `id`. */
const PERSON_COLUMNS = `toString(id) AS person,
       argMax(distinct_id, version) AS primary_id,
       argMax(properties, version) AS props,
       argMax(is_identified, version) AS identified,
       argMax(is_deleted, version) AS deleted,
       toString(argMax(created_at, version)) AS created,
       max(version) AS latest_version`;

/** The latest version of each of these persons; unknown ones are absent. */
export async function loadPersons(db: ClickHouse, personIds: readonly string[]): Promise<Map<string, Person>> {
  const query = (ids: string) => `SELECT ${PERSON_COLUMNS} FROM ${db.table("persons")} WHERE id IN ${ids} GROUP BY id`;
  return toPersons(await db.rowsIn<PersonRecord>(personIds, query));
}

/** Every person, a page at a time in id order (person ids are UUIDs other than the nil one). */
export async function* allPersons(db: ClickHouse, pageSize: number): AsyncGenerator<Map<string, Person>> {
  const query = (after: string) =>
    `SELECT ${PERSON_COLUMNS} FROM ${db.table("persons")} WHERE id > toUUID(${literal(after)}) GROUP BY id ORDER BY id`;
  for await (const rows of pages<PersonRecord>(db, query, NIL_UUID, (row) => row.person, pageSize)) {
    yield toPersons(rows);
  }
}

function toPersons(rows: readonly PersonRecord[]): Map<string, Person> {
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
