/**
 * Lets any number of shared tasks run at once, or one exclusive task alone. Flushes and repair sweeps are shared:
 * they overlap each other as they always have. A forget is exclusive: it starts once every flush and sweep under
 * way has finished, and none starts until it has, so that none reads a person before the erase and writes what
 * it derived back after it (docs/operations.md#forgetting-persons). Exclusive tasks go one at a time, in order;
 * a shared task that arrives while one waits waits behind it, so a stream of flushes cannot hold a forget off.
 */
export class Gate {
  readonly #shared = new Set<Promise<unknown>>();
  /** The exclusive task waiting or running, and those queued behind it: settles once the last is done. */
  #exclusive: Promise<unknown> | undefined;

  /** Runs `task` beside other shared tasks, once no exclusive one waits or runs. */
  async shared<T>(task: () => Promise<T>): Promise<T> {
    while (this.#exclusive !== undefined) await this.#exclusive;
    const running = task();
    const settled = running.then(
      () => {},
      () => {},
    );
    this.#shared.add(settled);
    try {
      return await running;
    } finally {
      this.#shared.delete(settled);
    }
  }

  /** Runs `task` alone: after the shared tasks under way and the exclusive ones before it. */
  exclusive<T>(task: () => Promise<T>): Promise<T> {
    const before = this.#exclusive ?? Promise.resolve();
    const run = before.then(async () => {
      while (this.#shared.size > 0) await Promise.all(this.#shared);
      return task();
    });
    const settled = run.then(
      () => {},
      () => {},
    );
    this.#exclusive = settled;
    void settled.then(() => {
      if (this.#exclusive === settled) this.#exclusive = undefined;
    });
    return run;
  }
}
