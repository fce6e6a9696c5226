/**
 * The identity rows a load writes, per table: what identity costs in the engine, next to the time it takes.
 * Counted as inserted, not as stored (every identity table collapses rows by key in its merges), from the
 * service's own counter of them, `ingest_rows_written_total{table}`.
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

/** Rows inserted into each identity table since the service started, from its metrics' text. */
export function rowsInserted(metrics: string): Record<IdentityTable, number> {
  const rows = Object.fromEntries(IDENTITY_TABLES.map((table) => [table, 0])) as Record<IdentityTable, number>;
  for (const [, table, count] of metrics.matchAll(/^ingest_rows_written_total\{table="(\w+)"\} (\S+)$/gm)) {
    if (table! in rows) rows[table as IdentityTable] = Number(count);
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
