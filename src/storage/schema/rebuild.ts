import type { ClickHouse } from "../clickhouse";
import { literal } from "../sql";
import { SESSION_COLUMNS, sessionsFrom } from "./sessions";

/**
 * Where `sessions` is kept while it is made again from events: until the refill is done, so that a start stopped
 * on the way (a crash, a kill) refills at the next one.
 */
export const SESSIONS_SET_ASIDE = "sessions_before_rebuild";

/**
 * The most events one insert of the refill sums up (whole days of them; a larger day is one insert). An insert's
 * memory grows with the sessions it holds, each with its entry's properties: all of a million events' at once took
 * over 2 GiB, where the service's own inserts take a flush at a time.
 */
const EVENTS_PER_INSERT = 100_000;

/** What a rebuild of `sessions` tells: that it starts (why, over how many events), then that it is done. */
export type Rebuild =
  | { readonly phase: "started"; readonly table: string; readonly reason: string; readonly events: number }
  | {
      readonly phase: "done";
      readonly table: string;
      readonly events: number;
      readonly inserts: number;
      readonly seconds: number;
    };

/** Told of a rebuild at startup. */
export type RebuildObserver = (rebuild: Rebuild) => void;

export const warnRebuild: RebuildObserver = (rebuild) =>
  console.warn(
    rebuild.phase === "started"
      ? `Schema: ${rebuild.table} is made again from ${rebuild.events} events (${rebuild.reason}).`
      : `Schema: ${rebuild.table} made again from ${rebuild.events} events in ${rebuild.seconds.toFixed(1)} s.`,
  );

/**
 * On one server: `sessions` holds nothing that `events` does not (its view sums them up, `ingest forget` sums them up
 * again), so a `sessions` with a column of another type than this version writes (its counts were `uniqExact`
 * states before schema version 2), or without one it writes (the entry was one tuple column, `entry`, before
 * version 4), is made again rather than refused or given a column that old sessions would hold empty. Drops the
 * view and renames the table to `SESSIONS_SET_ASIDE`; the caller then creates both anew and calls `refillSessions`.
 * Returns why a refill is due, or undefined: also due when a start before this one set the table aside and stopped
 * before the refill was done. On a cluster it does nothing: the column check refuses a column of another type and
 * adds a missing one (CHANGELOG.md says how to rebuild it there).
 */
export async function setAsideSessions(db: ClickHouse): Promise<string | undefined> {
  if (db.cluster !== undefined) return undefined;
  const rows = await db.rows<{ table: string; name: string; type: string }>(
    `SELECT table, name, type FROM system.columns WHERE database = ${literal(db.database)}
       AND table IN ('sessions', ${literal(SESSIONS_SET_ASIDE)})`,
  );
  if (rows.some((row) => row.table === SESSIONS_SET_ASIDE)) return "a rebuild begun before was not finished";
  const changed = rows.find((row) => SESSION_COLUMNS[row.name] !== undefined && SESSION_COLUMNS[row.name] !== row.type);
  const missing =
    rows.length === 0 ? undefined : Object.keys(SESSION_COLUMNS).find((name) => !rows.some((row) => row.name === name));
  if (changed === undefined && missing === undefined) return undefined;
  // the view first, so that nothing is written into the table set aside; events inserted until the new view
  // exists are in `events` before the refill reads it
  await db.command(`DROP VIEW IF EXISTS ${db.table("sessions_mv")}`);
  await db.command(`RENAME TABLE ${db.table("sessions")} TO ${db.table(SESSIONS_SET_ASIDE)}`);
  return changed === undefined
    ? `it has no ${missing}, which this version writes`
    : `its ${changed.name} is ${changed.type}, where this version writes ${SESSION_COLUMNS[changed.name]}`;
}

/**
 * Sums up every stored event into the new `sessions`, a few days at a time (`EVENTS_PER_INSERT`), then drops the
 * table set aside. The view feeds `sessions` already: an event both count counts once (the counts are sets, the
 * other columns first and last values), so a refill run again, or run while other instances insert, changes
 * nothing it should not.
 */
export async function refillSessions(db: ClickHouse, reason: string, onRebuild: RebuildObserver): Promise<void> {
  const started = performance.now();
  const table = db.table("sessions");
  // toDate32: toDate stops at 2149, and an event may be dated up to 2299
  const days = await db.rows<{ day: string; events: string | number }>(
    `SELECT toString(toDate32(timestamp)) AS day, count() AS events FROM ${db.table("events")}
     WHERE session_id != '' GROUP BY day ORDER BY day`,
  );
  const events = days.reduce((sum, day) => sum + Number(day.events), 0);
  onRebuild({ phase: "started", table, reason, events });
  const chunks = daysInChunks(days, EVENTS_PER_INSERT);
  for (const { from, to } of chunks) {
    const start = `toDateTime64(${literal(from)}, 6, 'UTC')`;
    const end = `toDateTime64(${literal(to)}, 6, 'UTC') + INTERVAL 1 DAY`;
    // on the raw timestamp, so the sorting key (toDate(timestamp), …) finds the days' granules
    await db.command(sessionsFrom(table, db.table("events"), `timestamp >= ${start} AND timestamp < ${end}`));
  }
  await db.command(`DROP TABLE IF EXISTS ${db.table(SESSIONS_SET_ASIDE)}`);
  const seconds = (performance.now() - started) / 1000;
  onRebuild({ phase: "done", table, events, inserts: chunks.length, seconds });
}

/** A run of days, the first and the last (`YYYY-MM-DD`). */
interface Chunk {
  readonly from: string;
  readonly to: string;
}

/** Consecutive days, in order, joined into runs of at most `limit` events each; a day of more is a run alone. */
export function daysInChunks(days: readonly { day: string; events: string | number }[], limit: number): Chunk[] {
  const chunks: Chunk[] = [];
  let current: { from: string; to: string; events: number } | undefined;
  for (const { day, events } of days) {
    const n = Number(events);
    if (current !== undefined && current.events + n <= limit) {
      current.to = day;
      current.events += n;
      continue;
    }
    if (current !== undefined) chunks.push({ from: current.from, to: current.to });
    current = { from: day, to: day, events: n };
  }
  if (current !== undefined) chunks.push({ from: current.from, to: current.to });
  return chunks;
}
