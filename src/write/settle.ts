import { type ClickHouse, literal } from "../storage";
import type { Settled, StorageObserver } from "../telemetry";

/** A run settles at most so many days, the next run the rest: a shutdown waits for the run under way. */
const DAYS_A_RUN = 8;

/**
 * Settling (docs/analytics.md#the-copies): a day of `events` that has taken no part for the quiet time, and is in
 * several parts of weight, is merged into one (`OPTIMIZE … PARTITION … FINAL`). `events_resolved` reads `events`
 * with `FINAL`, which merges whatever several parts hold of the same range of the sorting key, copies or not, and
 * reads a day in one part as it is; the engine's own merges leave a day in parts of like size (and, idle, the
 * embedded engine starts none).
 *
 * "Of weight": the parts besides the largest hold an eighth of its bytes or more. A late event for a settled day
 * (an SDK's retry, an offline queue) makes a small part, which costs `FINAL` the few granules of the big one its
 * rows fall in, not a rewrite of the day: each late part would otherwise be a rewrite, and a client sending an
 * event for each past day every hour would have the service rewrite the whole table every hour. So a day is
 * rewritten once when it settles, and again only after late events of an eighth of its size.
 *
 * Days only (partition ids of eight digits): a month partition (before 2020, from 2060, and every partition of a
 * table made before schema version 10) is rewritten whole by every settle. Not on a cluster, where each node holds
 * its own parts: there the engine's `min_age_to_force_merge_seconds` does it (docs/operations.md#settling-days).
 */
export async function settleDays(db: ClickHouse, quietMs: number): Promise<Settled | undefined> {
  if (db.cluster !== undefined) return undefined;
  const started = performance.now();
  const days = await db.rows<{ day: string }>(
    `SELECT partition_id AS day FROM system.parts
     WHERE database = ${literal(db.database)} AND table = 'events' AND active AND length(partition_id) = 8
     GROUP BY partition_id
     HAVING count() > 1 AND max(modification_time) <= now() - ${Math.ceil(quietMs / 1000)}
       AND (sum(bytes_on_disk) - max(bytes_on_disk)) * 8 >= max(bytes_on_disk)
     ORDER BY partition_id LIMIT ${DAYS_A_RUN}`,
  );
  for (const { day } of days) {
    await db.command(`OPTIMIZE TABLE ${db.table("events")} PARTITION ID ${literal(day)} FINAL`);
  }
  if (days.length === 0) return undefined;
  return { days: days.map(({ day }) => day), seconds: Number(((performance.now() - started) / 1000).toFixed(2)) };
}

/** How often days are settled: `afterMs` of quiet (`SETTLE_AFTER_S`; 0: never), looked for as often as that allows. */
export interface SettleOptions {
  readonly afterMs: number;
}

/** How often to look for days to settle: a quarter of the quiet time, from a second to a minute. */
export function settleIntervalMs({ afterMs }: SettleOptions): number {
  return afterMs <= 0 ? 0 : Math.min(60_000, Math.max(1_000, afterMs / 4));
}

/** Settles the days due, telling `observer`. */
export async function settleDue(db: ClickHouse, options: SettleOptions, observer?: StorageObserver): Promise<void> {
  const settled = await settleDays(db, options.afterMs);
  if (settled !== undefined) observer?.settled(settled);
}
