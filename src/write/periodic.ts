/**
 * A job run every interval in the background, one run at a time: a tick while a run is under way is skipped, a
 * run that fails is reported and the next tick tries again, and `stop` waits for the run under way.
 */
export class Periodic {
  #timer: Timer | undefined;
  #running: Promise<void> | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly run: () => Promise<void>,
    private readonly failed: (error: unknown) => void,
  ) {}

  /** Starts the ticks; none when the interval is 0. */
  start(): void {
    if (this.intervalMs <= 0) return;
    this.#timer = setInterval(() => {
      this.#running ??= this.run()
        .catch(this.failed)
        .finally(() => {
          this.#running = undefined;
        });
    }, this.intervalMs);
    this.#timer.unref();
  }

  /** Stops the ticks, once the run under way (if any) is done. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
  }
}
