import { factsWrittenBetween, type IdentityResolver, latestFactWrite, type SweepCursor, stamped } from "../identity";
import type { ClickHouse } from "../storage";
import type { StorageObserver } from "../telemetry";
import { Gate } from "./gate";
import { Periodic } from "./periodic";

/** Most distinct IDs one sweep re-derives, by default: the bound on a sweep's work (the rest waits for the next). */
export const REPAIR_BATCH_IDS = 10_000;
/**
 * How far before the latest written fact the sweep at startup begins: facts a process left behind when it died
 * are the last it wrote, so they are at most this old when the table's latest fact is theirs. While any instance
 * runs, its sweeps cover what is written meanwhile, whoever wrote it.
 */
const STARTUP_LOOKBACK_MS = 10 * 60_000;
/** Each sweep looks this far behind where the last one stopped: the instances' clocks differ a little. */
const OVERLAP_MS = 10_000;
/** Facts younger than this are left to the next sweep: the flush that wrote them is most likely still writing. */
export const REPAIR_SETTLE_MS = 5_000;

export interface RepairOptions {
  /** Milliseconds between sweeps; 0: only the one at startup. */
  readonly intervalMs: number;
  /**
   * Whether this process is the only writer (embedded, nobody writing through its port): then only its own
   * failed writes can leave facts behind, and a periodic sweep runs only after one (`failed`).
   */
  readonly soleWriter: boolean;
  /** Most distinct IDs one sweep re-derives (`REPAIR_BATCH_IDS`). */
  readonly batchIds: number;
  /** Facts younger than this (milliseconds) wait for a later sweep (`REPAIR_SETTLE_MS`). */
  readonly settleMs: number;
}

/**
 * The service's own repair of identity (docs/scale-out.md#repair): a flush that wrote its facts and then failed,
 * for a client that does not retry (a browser closing its page, an SDK that gave up), leaves facts that no person
 * or link reflects. The sweep re-derives, from all their facts, the components of the IDs whose facts were written
 * since the last sweep, and writes the persons and links that lag behind them, persons first. Any number of
 * instances may sweep at once: what they write is derived from facts alone, as a flush's is.
 */
export class RepairSweep {
  /** Facts written up to here (milliseconds) have been swept. */
  #sweptTo: number | undefined;
  /** Within a backlog (a sweep that found more IDs than it takes): where the next one goes on, without overlap. */
  #cursor: SweepCursor | undefined;
  /** The periodic sweeps, after the one at startup. */
  readonly #ticks: Periodic;
  /** A sole writer: when the earliest facts of its own writes that failed since the last sweep were written. */
  #failedSince: number | undefined;

  constructor(
    private readonly db: ClickHouse,
    private readonly identity: IdentityResolver,
    private readonly options: RepairOptions,
    private readonly observer?: StorageObserver,
    /** Shared with the flushes: a forget runs while no sweep does (`Storage.forget`). */
    gate = new Gate(),
  ) {
    this.#ticks = new Periodic(
      options.intervalMs,
      () => gate.shared(() => this.#tick(Date.now() - options.settleMs)),
      (error) => observer?.repairFailed(error),
    );
  }

  /** The sweep at startup, from a little before the latest fact written up to now; then one every interval. */
  async start(): Promise<void> {
    const latest = await latestFactWrite(this.db);
    this.#sweptTo = latest === undefined ? Date.now() : latest - STARTUP_LOOKBACK_MS;
    await this.#sweep(Date.now());
    this.#ticks.start();
  }

  /** A write whose facts went in at `factsAt` (milliseconds) failed: a sole writer sweeps them at the next tick. */
  failed(factsAt: number): void {
    this.#failedSince = Math.min(this.#failedSince ?? factsAt, factsAt);
  }

  /** A periodic sweep; a sole writer whose writes all succeeded has nothing to sweep, and only moves on. */
  async #tick(upTo: number): Promise<void> {
    if (this.options.soleWriter && this.#cursor === undefined) {
      if (this.#failedSince === undefined) {
        this.#sweptTo = upTo;
        return;
      }
      this.#sweptTo = Math.min(this.#sweptTo ?? upTo, this.#failedSince);
      // facts younger than the settling time wait for the next tick
      if (this.#failedSince <= upTo) this.#failedSince = undefined;
    }
    await this.#sweep(upTo);
  }

  /** Stops sweeping, once the sweep under way (if any) is done. */
  stop(): Promise<void> {
    return this.#ticks.stop();
  }

  async #sweep(upTo: number): Promise<void> {
    const started = performance.now();
    const cursor = this.#cursor;
    const after = cursor === undefined ? (this.#sweptTo ?? upTo) - OVERLAP_MS : cursor.at - 1;
    const { ids, last } = await factsWrittenBetween(this.db, after, upTo, this.options.batchIds, cursor);
    if (ids.length > 0) {
      const repair = await this.identity.repair(ids, upTo);
      await this.db.insert("persons", repair.persons);
      await this.db.insert("person_overrides", stamped(repair.overrides));
      await this.db.insert("person_distinct_ids", repair.distinctIds);
      this.identity.repaired(repair);
      this.observer?.repaired({
        ids: ids.length,
        persons: repair.persons.length,
        links: repair.distinctIds.length,
        overrides: repair.overrides.length,
        seconds: (performance.now() - started) / 1000,
      });
    }
    // a full batch leaves a backlog: the next sweep goes on right after its last ID, however many share a moment
    this.#cursor = ids.length === this.options.batchIds ? last : undefined;
    if (this.#cursor === undefined) this.#sweptTo = upTo;
  }
}
