import { type ClickHouse, chunkByBytes, literal, literalList, onClusterClause } from "../storage";
import type { Squashed, StorageObserver } from "../telemetry";
import { type Mutation, mutated } from "./mutations";

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

/** Most bytes of the UUIDs one mutation moves: it names each twice, and its person once (a statement's limit is 256 KiB). */
const MUTATION_LIST_BYTES = 48 * 1024;

/**
 * Applies the overrides written since the last squash and before `before` (milliseconds) to `events`; nothing
 * when none was written then.
 */
export async function squashOverrides(db: ClickHouse, before: number): Promise<Squashed | undefined> {
  const started = performance.now();
  const overrides = db.table("person_overrides");
  const since = await squashedBefore(db);
  if (before <= since) return undefined;
  // the newest override of each person with one written in the window (a survivor's own points at itself)
  const written = await db.rows<{ old: string; now_on: string }>(
    `SELECT toString(old_person_id) AS old, toString(argMax(override_person_id, version)) AS now_on
     FROM ${overrides}
     WHERE old_person_id IN (SELECT old_person_id FROM ${overrides} WHERE written_at >= ${at(since)} AND written_at < ${at(before)})
     GROUP BY old_person_id`,
  );
  // none: the view reads the same whether this squash is recorded or not
  if (written.length === 0) return undefined;
  const target = new Map(written.filter((row) => row.now_on !== row.old).map((row) => [row.old, row.now_on]));
  const mutations: Mutation[] = [];
  const table = db.cluster === undefined ? "events" : "events_local";
  for (const olds of chunkByBytes([...target.keys()], MUTATION_LIST_BYTES)) {
    const array = (values: readonly string[]) => `[${values.map(literal).join(", ")}]`;
    const nows = olds.map((old) => target.get(old)!);
    await db.command(
      `ALTER TABLE ${db.table(table)}${onClusterClause(db.cluster)}
       UPDATE person_id = toUUID(transform(toString(person_id), ${array(olds)}, ${array(nows)}, toString(person_id)))
       WHERE person_id IN ${literalList(olds)}`,
    );
    mutations.push({ table, marker: olds[0]! });
  }
  for (const mutation of mutations) await mutated(db, mutation);
  await db.insert("person_squashes", [
    { squashed_before: at(before, false), squashed_at: at(Date.now(), false), persons: target.size },
  ]);
  return { before, persons: target.size, seconds: Math.round((performance.now() - started) / 10) / 100 };
}

/** Overrides written before this (milliseconds) are squashed; 0 before the first squash. */
export async function squashedBefore(db: ClickHouse): Promise<number> {
  const [row] = await db.rows<{ before: number | string }>(
    `SELECT toUnixTimestamp64Milli(max(squashed_before)) AS before FROM ${db.table("person_squashes")}`,
  );
  return Number(row?.before ?? 0);
}

/** A time in milliseconds as `DateTime64(3, 'UTC')` takes it: a literal for a query, or a row's value. */
function at(ms: number, quoted = true): string {
  const text = new Date(ms).toISOString().slice(0, 23).replace("T", " ");
  return quoted ? `toDateTime64(${literal(text)}, 3, 'UTC')` : text;
}

/** When the service squashes (`SQUASH_INTERVAL_S`, `SQUASH_GRACE_S`). */
export interface SquashOptions {
  /** Milliseconds between squashes; 0: never. */
  readonly intervalMs: number;
  /** Overrides younger than this (milliseconds) wait for a later squash. */
  readonly graceMs: number;
}

/** The service's squashes, one every interval; a failed one is reported and tried again at the next. */
export class SquashSchedule {
  #timer: Timer | undefined;
  #running: Promise<void> | undefined;

  constructor(
    private readonly db: ClickHouse,
    private readonly options: SquashOptions,
    private readonly observer?: StorageObserver,
  ) {}

  start(): void {
    if (this.options.intervalMs <= 0) return;
    this.#timer = setInterval(() => {
      this.#running ??= this.#squash()
        .catch((error: unknown) => this.observer?.squashFailed(error))
        .finally(() => {
          this.#running = undefined;
        });
    }, this.options.intervalMs);
    this.#timer.unref();
  }

  async #squash(): Promise<void> {
    const squash = await squashOverrides(this.db, Date.now() - this.options.graceMs);
    if (squash !== undefined && squash.persons > 0) this.observer?.squashed(squash);
  }

  /** Stops the schedule and waits for a squash under way. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
  }
}
