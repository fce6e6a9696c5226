interface Submission<T> {
  readonly items: readonly T[];
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

export interface GroupCommitOptions {
  /** Most items one flush takes (always at least one whole submission). */
  readonly maxItems: number;
  /**
   * Whether a failure may be the fault of only some submissions in the group (the database refused what one
   * of them wrote). Then the group is split to find them; otherwise every submission fails with it, at once.
   */
  readonly isolates: (error: unknown) => boolean;
  /**
   * Most milliseconds a flush waits, before it starts, for as many submissions as the previous flush answered
   * plus those that were waiting then: the clients just answered usually send again at once. 0: never waits.
   */
  readonly lingerMs: number;
}

/**
 * Writes a group. Calling `release` lets the next group's flush begin while this one finishes: the flush says when
 * the part that must see groups one at a time is done (identity resolution), so that the rest (the events insert)
 * may overlap the next group's. A flush that never calls it runs alone.
 */
export type Flush<T> = (items: readonly T[], release: () => void) => Promise<void>;

/**
 * A writer with group commit. Each flush takes every submission that arrived while the previous one ran (up to
 * `maxItems` items), in arrival order. So concurrent requests become few large inserts, and the serial part of a
 * flush (identity resolution) sees the requests one after another, never interleaved. At most two flushes are in
 * flight: one in its serial part, the one before it finishing, and the two only while a full flush's worth waits.
 *
 * A submission's promise settles when its flush has finished: resolved means written. A failed flush costs the
 * group once: all of it fails together, unless `isolates` says the failure may be one submission's own, and
 * then halves are flushed in order until each failing submission stands alone (about 2·log2(n) flushes for one
 * bad submission among n, rather than n).
 */
export class GroupCommit<T> {
  readonly #queue: Submission<T>[] = [];
  /** Halves of groups that failed, flushed before anything newer, each alone. */
  readonly #splits: Submission<T>[][] = [];
  #queuedItems = 0;
  #running: Promise<void> | undefined;
  /** The last flush started, until it settles: the one a new flush may overlap. */
  #previous: Promise<void> | undefined;
  /** Submissions the next flush waits for (up to `lingerMs`): those the last flush answered and those waiting then. */
  #expected = 0;
  /** Ends the current wait early, once enough has arrived. */
  #endWait: (() => void) | undefined;
  /** Ends a released flush's wait for its answer, once a full flush's worth waits. */
  #onFull: (() => void) | undefined;

  constructor(
    private readonly flush: Flush<T>,
    private readonly options: GroupCommitOptions,
  ) {}

  submit(items: readonly T[]): Promise<void> {
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    this.#queue.push({ items, resolve, reject });
    this.#queuedItems += items.length;
    if (this.#endWait !== undefined && this.#enough()) this.#endWait();
    if (this.#onFull !== undefined && this.#full()) this.#onFull();
    this.#running ??= this.#run();
    return promise;
  }

  /** Items submitted and not yet taken by a flush. */
  get queuedItems(): number {
    return this.#queuedItems;
  }

  /** Settles once everything submitted so far has been flushed (or has failed). */
  async drain(): Promise<void> {
    while (this.#running !== undefined || this.#previous !== undefined) await (this.#running ?? this.#previous);
  }

  async #run(): Promise<void> {
    while (this.#splits.length > 0 || this.#queue.length > 0) {
      let group = this.#splits.shift();
      if (group === undefined) {
        if (this.#waits()) await this.#linger();
        group = this.#takeGroup();
      }
      const { promise: released, resolve: release } = Promise.withResolvers<void>();
      const flushed = this.#flushGroup(group, release);
      await Promise.race([released, flushed]);
      if (!this.#full()) await this.#answeredOrFull(flushed);
      await this.#previous; // at most two in flight
      const settled: Promise<void> = flushed.then(() => {
        if (this.#previous === settled) this.#previous = undefined;
      });
      this.#previous = settled;
    }
    this.#running = undefined;
  }

  /**
   * Without it, clients that keep sending (SDKs, 16 connections of a load test) split into two groups that take
   * turns, each flush half the size it could be; every flush has a fixed cost (an insert, a part to merge), so
   * waiting a few milliseconds for the answered clients to come back pays for itself (docs/architecture.md#linger). A lone
   * client never waits: it is all the last flush answered.
   */
  async #linger(): Promise<void> {
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#endWait = resolve;
    const timer = setTimeout(resolve, this.options.lingerMs);
    await promise;
    clearTimeout(timer);
    this.#endWait = undefined;
  }

  /**
   * A released flush lets the next one begin beside it only once a full flush's worth waits. Otherwise the next
   * flush would take only the clients that came while this one resolved: its own clients, still waiting for their
   * events, come back after, and clients that keep sending split into two groups that take turns, every flush half
   * the size and each paying an insert per table and a part to merge (docs/architecture.md#group-commit). Waiting
   * for this flush's answer lets the linger bring its clients into the next.
   */
  async #answeredOrFull(flushed: Promise<void>): Promise<void> {
    const { promise: full, resolve } = Promise.withResolvers<void>();
    this.#onFull = resolve;
    await Promise.race([flushed, full]);
    this.#onFull = undefined;
  }

  #full(): boolean {
    return this.#queuedItems >= this.options.maxItems;
  }

  #waits(): boolean {
    return this.options.lingerMs > 0 && !this.#enough();
  }

  #enough(): boolean {
    return this.#queue.length >= this.#expected || this.#full();
  }

  #takeGroup(): Submission<T>[] {
    let count = 0;
    let taken = 0;
    while (taken < this.#queue.length) {
      const size = this.#queue[taken]!.items.length;
      if (taken > 0 && count + size > this.options.maxItems) break;
      count += size;
      taken++;
    }
    this.#queuedItems -= count;
    return this.#queue.splice(0, taken);
  }

  /** Never rejects: a group that fails is answered, or split into halves that the run flushes next. */
  async #flushGroup(group: readonly Submission<T>[], release: () => void): Promise<void> {
    try {
      await this.flush(group.length === 1 ? group[0]!.items : group.flatMap((submission) => submission.items), release);
    } catch (error) {
      if (group.length === 1 || !this.options.isolates(error)) {
        this.#answer(group, (submission) => submission.reject(error));
        return;
      }
      const half = Math.ceil(group.length / 2);
      this.#splits.unshift(group.slice(0, half), group.slice(half));
      this.#running ??= this.#run();
      return;
    }
    this.#answer(group, (submission) => submission.resolve());
  }

  /**
   * Settles a group. Its clients resume only after this returns, so the queue holds just the submissions that
   * were already waiting: with the group, what the next flush expects.
   */
  #answer(group: readonly Submission<T>[], settle: (submission: Submission<T>) => void): void {
    this.#expected = group.length + this.#queue.length;
    for (const submission of group) settle(submission);
  }
}
