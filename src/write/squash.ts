import { type ClickHouse, onClusterClause } from "../storage";
import type { Squashed, StorageObserver } from "../telemetry";
import { mutated } from "./mutations";

/**
 * The squash (docs/identity.md#squashing-merges), as PostHog's: once a person is merged away, its events are
 * rewritten to the person it went to, so that `events_resolved` joins only the overrides written since, and none
 * at all once every merge is squashed (a join costs each event a hash probe, whatever the joined table holds).
 *
 * Only overrides written before `before` are applied, and a run records `before` (`person_squashes`): the view
 * joins the overrides written from the latest such time on. What that needs of `before`: every event that will
 * ever be stored with a person merged away by an override written earlier must be stored by the time the
 * mutation is registered, since a mutation rewrites the parts that exist then, never a later insert. An event is
 * stored with a merged-away person only by a flush that resolved it before the merge was written: another
 * instance's cached link (`LINK_CACHE_TTL_MS`), a flush under way, a replica that lags. So the service squashes
 * overrides older than `SQUASH_GRACE_S`, far beyond those. An event that still came later, with a person squashed
 * away, would keep that person.
 *
 * Each override applied is its person's newest (over all its rows, those written later too): a later one moves
 * the events further, and the person the squash moved them to is then merged away by an override written after
 * `before`, which the view joins. Running twice, or on two instances at once, rewrites nothing twice: the second
 * finds no event with a person it moves.
 */

/**
 * Applies the overrides written since the last squash and before `before` (milliseconds) to `events`; nothing
 * when none was written then.
 *
 * One mutation, whose statement reads the overrides itself: the engine rewrites each part once however many
 * persons move (a part costs the same rewritten for one as for thousands, and a small part, stored in one file,
 * is rewritten whole), and a statement naming them would need several under the engine's 256 KiB limit. The engine
 * reads the newest override of each as it rewrites each part, which is as good as one read before.
 */
export async function squashOverrides(db: ClickHouse, before: number): Promise<Squashed | undefined> {
  const started = performance.now();
  const overrides = db.table("person_overrides");
  const since = await squashedBefore(db);
  if (before <= since) return undefined;
  const window = `written_at >= ${at(since)} AND written_at < ${at(before)}`;
  const [written] = await db.rows<{ n: number | string }>(`SELECT count() AS n FROM ${overrides} WHERE ${window}`);
  // none: the view reads the same whether this squash is recorded or not
  if (Number(written?.n ?? 0) === 0) return undefined;
  // the newest override of each person with one written in the window, but a survivor's own
  const moved = `SELECT toString(old_person_id) AS old, toString(argMax(override_person_id, version)) AS now_on
    FROM ${overrides} WHERE old_person_id IN (SELECT old_person_id FROM ${overrides} WHERE ${window})
    GROUP BY old_person_id HAVING now_on != old`;
  const [counted] = await db.rows<{ n: number | string }>(`SELECT count() AS n FROM (${moved})`);
  const persons = Number(counted?.n ?? 0);
  if (persons > 0) {
    const table = db.cluster === undefined ? "events" : "events_local";
    // the two arrays from one read, in one order, whether the engine reads the overrides once or twice
    const arrays = `(SELECT (groupArray(old), groupArray(now_on)) FROM (${moved} ORDER BY old))`;
    await db.command(
      `ALTER TABLE ${db.table(table)}${onClusterClause(db.cluster)} UPDATE person_id = toUUID(transform(toString(person_id),
         tupleElement(${arrays}, 1), tupleElement(${arrays}, 2), toString(person_id)))
       WHERE person_id IN (SELECT toUUID(old) FROM (${moved}))`,
      // a replicated table takes a statement with a subquery only so: each replica reads the same overrides
      db.cluster === undefined ? {} : { allow_nondeterministic_mutations: 1 },
    );
    await mutated(db, { table, marker: at(before) });
  }
  await db.command(`INSERT INTO ${db.table("person_squashes")} SELECT ${at(before)}, now64(3), ${persons}`);
  return { before, persons, seconds: Math.round((performance.now() - started) / 10) / 100 };
}

/** Overrides written before this (milliseconds) are squashed; 0 before the first squash. */
export async function squashedBefore(db: ClickHouse): Promise<number> {
  const [row] = await db.rows<{ before: number | string }>(
    `SELECT toUnixTimestamp64Milli(max(squashed_before)) AS before FROM ${db.table("person_squashes")}`,
  );
  return Number(row?.before ?? 0);
}

/** A time in milliseconds, as a query compares `DateTime64(3, 'UTC')` with it (as the repair sweep's reads do). */
const at = (ms: number): string => `fromUnixTimestamp64Milli(${Math.trunc(ms)}, 'UTC')`;

/** When the service squashes (`SQUASH_INTERVAL_S`, `SQUASH_GRACE_S`). */
export interface SquashOptions {
  /** Milliseconds between squashes; 0: never. */
  readonly intervalMs: number;
  /** Overrides younger than this (milliseconds) wait for a later squash. */
  readonly graceMs: number;
}

/** The service's squash, run every interval (`Periodic`): the overrides older than the grace, told when it moved any. */
export async function squashAged(db: ClickHouse, graceMs: number, observer?: StorageObserver): Promise<void> {
  const squash = await squashOverrides(db, Date.now() - graceMs);
  if (squash !== undefined && squash.persons > 0) observer?.squashed(squash);
}
