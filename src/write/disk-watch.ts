import { isDiskLow, type StorageUsage } from "../storage";
import type { StorageObserver } from "../telemetry";

export interface DiskWatchOptions {
  /** `DISK_WARN_PERCENT`: low under this percent free; 0 turns the watch off. */
  readonly percent: number;
  /** Milliseconds between checks. */
  readonly intervalMs: number;
  /** Milliseconds between warnings while the disk stays low. */
  readonly repeatMs: number;
}

export const DISK_WATCH = { intervalMs: 60_000, repeatMs: 3_600_000 } as const;

/**
 * Watches the room left on the tables' disk, so that an operator hears of a filling disk before ingest stops on it,
 * whether or not anything scrapes the metrics: a warning when it becomes low and each `repeatMs` it stays so, a
 * note when it recovers. A failed read is skipped (the engine's own errors are reported by the writes).
 */
export class DiskWatch {
  #timer: ReturnType<typeof setInterval> | undefined;
  /** When the last warning was given, while the disk is low. */
  #warnedAt: number | undefined;

  constructor(
    private readonly read: () => Promise<StorageUsage>,
    private readonly options: DiskWatchOptions,
    private readonly observer: Pick<StorageObserver, "diskLow" | "diskRecovered"> | undefined,
  ) {}

  start(): void {
    if (this.options.percent <= 0 || this.observer === undefined) return;
    void this.check();
    this.#timer = setInterval(() => void this.check(), this.options.intervalMs);
    this.#timer.unref?.();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** Reads the disk once and tells the observer what changed. */
  async check(now: number = Date.now()): Promise<void> {
    const disk = await this.read().then(
      (usage) => usage.disk,
      () => undefined,
    );
    if (disk === undefined) return;
    if (isDiskLow(disk, this.options.percent)) {
      if (this.#warnedAt === undefined || now - this.#warnedAt >= this.options.repeatMs) {
        this.#warnedAt = now;
        this.observer?.diskLow(disk);
      }
    } else if (this.#warnedAt !== undefined) {
      this.#warnedAt = undefined;
      this.observer?.diskRecovered(disk);
    }
  }
}
