import type { ClickHouse } from "./clickhouse";
import { onClusterClause } from "./schema";
import { literal } from "./sql";

/**
 * Retention (`EVENTS_RETENTION_DAYS`; docs/operations.md#retention): events and sessions are kept so many days,
 * then dropped. Persons, links, identity facts, overrides and groups are never touched: only the two tables below.
 *
 * - At startup, the partitions of `events` that lie wholly before the retention (UTC days; months in tables made
 *   before schema version 10) are dropped whole (`DROP PARTITION`): their disk is free at once, and no merge reads
 *   them (one the engine refuses is left to the TTL).
 * - Then each table gets a TTL of whole UTC days: the rows of a day go once that day ended `days` days ago (an
 *   event is kept at least `days` days). `toDate32`, because `toDate` and `toDateTime` wrap around outside
 *   1970–2149 and 1970–2106, and would date an event of 2200 (the contract takes 1900–2299) long expired.
 * - `materialize_ttl_recalculate_only`: setting the TTL computes, for the parts already stored, only when their
 *   rows expire (reading the one column), where by default it rewrites every part of the table at once. Merges
 *   then apply it, as they do to new parts.
 * - `events` has `ttl_only_drop_parts`: the TTL drops a part once every row of it has expired, and never rewrites
 *   one to remove some of its rows. A day's rows expire together, so its parts go whole once it is past, as the
 *   startup's `DROP PARTITION` would drop it, and no timer repeats that. (A month partition's parts go once the
 *   month is past; until then a merge that rewrites one anyway leaves its expired rows out.)
 * - `sessions` is not partitioned by time, so its parts hold sessions of every age and would never expire whole:
 *   its TTL removes rows (a session goes once its last event has), rewriting a part at most once a day.
 *
 * On a cluster the shards' `_local` tables are altered, `ON CLUSTER`; nothing is sent when the tables are as they
 * should be, so an instance starts while a node is down. With no retention, a TTL of this service's form is
 * removed, so that everything is kept again; another TTL (an operator's own) is left alone.
 */

/** A table retention applies to: the column its TTL reads, and the table settings it needs. */
interface Retained {
  readonly name: "events" | "sessions";
  readonly column: string;
  readonly settings: Readonly<Record<string, number>>;
}

const RETAINED: readonly Retained[] = [
  { name: "events", column: "timestamp", settings: { materialize_ttl_recalculate_only: 1, ttl_only_drop_parts: 1 } },
  { name: "sessions", column: "max_timestamp", settings: { materialize_ttl_recalculate_only: 1 } },
];

/** A TTL this service sets, as the engine prints it back. */
const OWN_TTL = /^toDate32\((timestamp|max_timestamp)\) \+ toIntervalDay\(\d+\)$/;

/** What retention changed in a table at this start (nothing unchanged is reported). */
export interface RetentionChange {
  /** The table altered: `events` or `sessions` (their `_local` tables on a cluster). */
  readonly table: string;
  /** The TTL set (as the engine prints it), `null` when one was removed; absent when it was left as it was. */
  readonly ttl?: string | null;
  /** Partitions dropped whole: days (`20240115`), or months (`202401`) in a table made before schema version 10. */
  readonly dropped: readonly string[];
  /** Partitions past the retention not dropped, as the engine refused the first of them: the TTL drops their parts. */
  readonly left: readonly string[];
  /** Why the engine refused (over `max_partition_size_to_drop`, no `ALTER DELETE`, a node down). */
  readonly cause?: unknown;
}

/** The TTL of a table retention keeps `days` days, as the engine prints it. */
export function retentionTtl(column: string, days: number): string {
  return `toDate32(${column}) + toIntervalDay(${days + 1})`;
}

/**
 * Whether a partition of `events` (a day, `YYYYMMDD`, or a month, `YYYYMM`) is wholly past a retention of `days` days
 * at `now`: it ended `days` days ago or more, so the TTL has expired all its rows. The first day kept is the one
 * `days` days back; a month goes once that day is in a later month.
 */
export function whollyPast(partition: string, days: number, now: number): boolean {
  const firstKept = new Date(now - days * 86_400_000).toISOString().slice(0, 10).replaceAll("-", "");
  return partition < firstKept.slice(0, partition.length);
}

/**
 * Applies a retention of `days` days (none: keep everything) to `events` and `sessions`, which must exist, and says
 * what it changed.
 */
export async function applyRetention(
  db: ClickHouse,
  days: number | undefined,
  now: number = Date.now(),
): Promise<RetentionChange[]> {
  const local = (name: string) => (db.cluster === undefined ? name : `${name}_local`);
  const names = RETAINED.map((spec) => literal(local(spec.name)));
  const tables = await db.rows<{ name: string; create_table_query?: string }>(
    `SELECT name, create_table_query FROM system.tables WHERE database = ${literal(db.database)} AND name IN (${names.join(", ")})`,
  );
  const changes: RetentionChange[] = [];
  for (const spec of RETAINED) {
    const table = local(spec.name);
    const created = tables.find((row) => row.name === table)?.create_table_query ?? "";
    // the partitions first: the TTL's computation then reads no part of them
    const partitions =
      days !== undefined && spec.name === "events"
        ? await dropPartitions(db, table, (id) => whollyPast(id, days, now))
        : { dropped: [], left: [] };
    const ttl = await setTtl(db, table, spec, created, days);
    if (ttl !== undefined || partitions.dropped.length + partitions.left.length > 0) {
      changes.push({ table, ...(ttl !== undefined && { ttl }), ...partitions });
    }
  }
  return changes;
}

/**
 * Drops the partitions of `table` (events) that are wholly `past`, each whole, oldest first. The drop only frees the
 * disk sooner, since the TTL drops the parts of such a partition too: so a refusal does not stop the start, and the
 * partitions from the refused one on are left to the TTL (one refusal, one wait: on a cluster, a node down holds DDL
 * for `distributed_ddl_task_timeout`).
 */
async function dropPartitions(
  db: ClickHouse,
  table: string,
  past: (partition: string) => boolean,
): Promise<Pick<RetentionChange, "dropped" | "left" | "cause">> {
  const rows = await db.rows<{ partition_id: string }>(
    `SELECT DISTINCT partition_id FROM system.parts WHERE database = ${literal(db.database)} AND table = ${literal(table)}
     AND active AND rows > 0 ORDER BY partition_id`,
  );
  const partitions = rows.map((row) => row.partition_id).filter((id) => /^\d{6}(\d{2})?$/.test(id) && past(id));
  const dropped: string[] = [];
  for (const partition of partitions) {
    try {
      await db.command(
        `ALTER TABLE ${db.table(table)}${onClusterClause(db.cluster)} DROP PARTITION ID ${literal(partition)}`,
      );
    } catch (cause) {
      return { dropped, left: partitions.slice(dropped.length), cause };
    }
    dropped.push(partition);
  }
  return { dropped, left: [] };
}

/**
 * Gives `table` the TTL and settings a retention of `days` needs, or removes a TTL of this service's form when there
 * is none; says the TTL it set (`null`: removed), or nothing when it sent no DDL. `created` is the table's
 * `create_table_query`, where the engine prints its TTL and settings.
 */
async function setTtl(
  db: ClickHouse,
  table: string,
  spec: Retained,
  created: string,
  days: number | undefined,
): Promise<string | null | undefined> {
  const alter = `ALTER TABLE ${db.table(table)}${onClusterClause(db.cluster)}`;
  const current = / TTL (.+?)(?: SETTINGS |$)/.exec(created)?.[1];
  if (days === undefined) {
    if (current === undefined || !OWN_TTL.test(current)) return undefined;
    await db.command(`${alter} REMOVE TTL`);
    return null;
  }
  const settings = / SETTINGS (.*)$/.exec(created)?.[1] ?? "";
  const has = (name: string, value: number) => new RegExp(`(^|, )${name} = ${value}(,|$)`).test(settings);
  const missing = Object.entries(spec.settings).filter(([name, value]) => !has(name, value));
  // before the TTL: how setting it treats the parts already stored depends on them
  if (missing.length > 0)
    await db.command(`${alter} MODIFY SETTING ${missing.map(([n, v]) => `${n} = ${v}`).join(", ")}`);
  const wanted = retentionTtl(spec.column, days);
  if (current !== wanted) await db.command(`${alter} MODIFY TTL ${wanted}`);
  return current === wanted && missing.length === 0 ? undefined : wanted;
}
