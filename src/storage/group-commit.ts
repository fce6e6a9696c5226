interface Submission<T> {
  readonly items: readonly T[];
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * A serial writer with group commit. One flush runs at a time; each takes every submission that arrived while
 * the previous one ran (up to `maxItems` items, and always at least one submission), in arrival order. So
 * concurrent requests become few large inserts, and whatever a flush does (identity resolution) sees the
 * requests one after another, never interleaved.
 *
 * A submission's promise settles when its flush has finished: resolved means written.
 */
export class GroupCommit<T> {
  readonly #queue: Submission<T>[] = [];
  #running: Promise<void> | undefined;

  constructor(
    private readonly flush: (items: readonly T[]) => Promise<void>,
    private readonly maxItems: number,
  ) {}

  submit(items: readonly T[]): Promise<void> {
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    this.#queue.push({ items, resolve, reject });
    this.#running ??= this.#run();
    return promise;
  }

  /** Settles once everything submitted so far has been flushed (or has failed). */
  async drain(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  async #run(): Promise<void> {
    while (this.#queue.length > 0) {
      const group = this.#takeGroup();
      if (!(await this.#flushGroup(group)) && group.length > 1) {
        // Flush each one alone, so that one submission the database refuses cannot fail the others with it.
        for (const submission of group) await this.#flushGroup([submission]);
      }
    }
    this.#running = undefined;
  }

  #takeGroup(): Submission<T>[] {
    let count = 0;
    let taken = 0;
    while (taken < this.#queue.length) {
      const size = this.#queue[taken]!.items.length;
      if (taken > 0 && count + size > this.maxItems) break;
      count += size;
      taken++;
    }
    return this.#queue.splice(0, taken);
  }

  /** Flushes the group and settles its submissions; a failed group of several is left for the caller to split. */
  async #flushGroup(group: readonly Submission<T>[]): Promise<boolean> {
    try {
      await this.flush(group.length === 1 ? group[0]!.items : group.flatMap((submission) => submission.items));
    } catch (error) {
      if (group.length === 1) group[0]!.reject(error);
      return false;
    }
    for (const submission of group) submission.resolve();
    return true;
  }
}
