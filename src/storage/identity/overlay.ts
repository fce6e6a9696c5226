/** Where a batch got an entry: from the cache, read from ClickHouse, or changed by the batch itself. */
type Origin = "cached" | "loaded" | "changed";

/**
 * One batch's copy of part of the person graph (links or persons, by key), with where each entry came from:
 * what the batch writes is what it changed, and what it may cache afterwards is everything it did not take
 * from the cache (those keep their original expiry).
 *
 * Nearly every entry of a batch comes from the cache and is only read, so those cost one map entry and no
 * object of their own; the few loaded or changed keys are also kept apart, so listing them does not walk the
 * whole batch.
 */
export class Overlay<V> {
  readonly #values = new Map<string, V>();
  /** Keys whose value was read from ClickHouse, and keys the batch changed; a key is in one at most. */
  readonly #loaded = new Set<string>();
  readonly #changed = new Set<string>();

  get(key: string): V | undefined {
    return this.#values.get(key);
  }

  isChanged(key: string): boolean {
    return this.#changed.has(key);
  }

  /** An entry as found in the cache or in ClickHouse. */
  put(key: string, value: V, origin: Exclude<Origin, "changed">): void {
    this.#values.set(key, value);
    if (this.#changed.size > 0) this.#changed.delete(key);
    if (origin === "loaded") this.#loaded.add(key);
    else if (this.#loaded.size > 0) this.#loaded.delete(key);
  }

  change(key: string, value: V): void {
    this.#values.set(key, value);
    this.#loaded.delete(key);
    this.#changed.add(key);
  }

  keys(): IterableIterator<string> {
    return this.#values.keys();
  }

  /**
   * Every entry, or those of the given origins (loaded, changed), as [key, value]: in the order the batch
   * first met them, or origin by origin in the order each got it. An array: a generator costs several times
   * more per entry.
   */
  entries(origins?: readonly Exclude<Origin, "cached">[]): [string, V][] {
    if (origins === undefined) return [...this.#values];
    const found: [string, V][] = [];
    for (const origin of origins) {
      for (const key of origin === "loaded" ? this.#loaded : this.#changed) found.push([key, this.#values.get(key)!]);
    }
    return found;
  }
}
