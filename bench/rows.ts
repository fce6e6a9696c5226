/**
 * The identity rows a load writes, per table: what identity costs in the engine, next to the time it takes.
 *
 * Counted as inserted, not as stored: every identity table collapses rows by key in its merges (Replacing- and
 * AggregatingMergeTree), so counting the tables after a load undercounts by however far merges got. chDB keeps
 * no `system.part_log` or `query_log`, and the service has no metric of rows by table, so the bench attaches a
 * materialized view to each table that adds each insert's row count to a Memory table (one row an insert, no
 * parts, no merges), through a writable query port the bench gives the service (`COUNTING_PORT`). The views stay
 * with the data directory; the Memory table starts empty with each process.
 */
/** Every table identity writes; the group tables only with `$groupidentify`. */
export const IDENTITY_TABLES = [
  "identity_facts",
  "persons",
  "person_distinct_ids",
  "person_overrides",
  "group_facts",
  "groups",
] as const;
export type IdentityTable = (typeof IDENTITY_TABLES)[number];

const PASSWORD = "bench-rows";
const COUNTS = "bench_inserted_rows";

/** What a service needs so that its rows can be counted: a query port that may create tables. */
export const COUNTING_PORT: Readonly<Record<string, string>> = {
  QUERY_PORT: "0",
  QUERY_PASSWORD: PASSWORD,
  QUERY_READONLY: "0",
};

/** Where a service's rows are counted: its query port and password. */
export interface RowCounter {
  readonly url: string;
  readonly password: string;
}

/** The counter of a service started with `env`, if its query port allows writes. */
export function rowCounterOf(
  env: Readonly<Record<string, string>>,
  queryUrl: string | undefined,
): RowCounter | undefined {
  const writable = env.QUERY_READONLY === "0" || env.QUERY_READONLY === "false";
  return queryUrl && writable ? { url: queryUrl, password: env.QUERY_PASSWORD ?? "" } : undefined;
}

async function query(counter: RowCounter, sql: string): Promise<string> {
  const response = await fetch(counter.url, {
    method: "POST",
    body: sql,
    headers: { authorization: `Basic ${btoa(`default:${counter.password}`)}` },
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`counting rows: ${response.status} ${text.slice(0, 300)}`);
  return text;
}

/** Attaches the counting views (once: a later call, or a restart on the same data, finds them there). */
export async function attachCounters(counter: RowCounter): Promise<void> {
  await query(counter, `CREATE TABLE IF NOT EXISTS ${COUNTS} (table String, rows UInt64) ENGINE = Memory`);
  for (const table of IDENTITY_TABLES) {
    await query(
      counter,
      `CREATE MATERIALIZED VIEW IF NOT EXISTS ${COUNTS}_${table} TO ${COUNTS} ` +
        `AS SELECT '${table}' AS table, count() AS rows FROM ${table}`,
    );
  }
}

/** Rows inserted into each identity table since the service started (since the counters were attached). */
export async function rowsInserted(counter: RowCounter): Promise<Record<IdentityTable, number>> {
  const text = await query(counter, `SELECT table, sum(rows) AS rows FROM ${COUNTS} GROUP BY table FORMAT JSONEachRow`);
  const rows = Object.fromEntries(IDENTITY_TABLES.map((table) => [table, 0])) as Record<IdentityTable, number>;
  for (const line of text.split("\n").filter((l) => l !== "")) {
    const { table, rows: count } = JSON.parse(line) as { table: IdentityTable; rows: string | number };
    rows[table] = Number(count);
  }
  return rows;
}

/** The identity rows written over some events: rows by table between two readings, and the events in between. */
export interface IdentityRows {
  readonly events: number;
  readonly rows: Readonly<Record<IdentityTable, number>>;
}

export function rowsBetween(
  before: Readonly<Record<IdentityTable, number>>,
  after: Readonly<Record<IdentityTable, number>>,
  events: number,
): IdentityRows {
  const rows = Object.fromEntries(IDENTITY_TABLES.map((table) => [table, after[table] - before[table]]));
  return { events, rows: rows as Record<IdentityTable, number> };
}

/** "identity_facts 0.62, persons 0.31, … (all 1.05) a row per event over N events". */
export function formatRowsPerEvent({ events, rows }: IdentityRows): string {
  const per = (count: number) => (count / events).toFixed(count > 0 && count / events < 0.01 ? 4 : 2);
  const total = IDENTITY_TABLES.reduce((sum, table) => sum + rows[table], 0);
  const byTable = IDENTITY_TABLES.map((table) => `${table} ${per(rows[table])}`).join(", ");
  return `${byTable} (all ${per(total)}) over ${events.toLocaleString("en")} events`;
}
