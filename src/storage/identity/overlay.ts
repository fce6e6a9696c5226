/** Where a batch got an entry: from the cache, read from ClickHouse, or changed by the batch itself. */
type Origin = "cached" | "loaded" | "changed";

interface Entry<V> {
  readonly value: V;
  readonly origin: Origin;
}

/**
 * One batch's copy of part of the person graph (links or persons, by key), with where each entry came from:
 * what the batch writes is what it changed, and what it may cache afterwards is everything it did not take
 * from the cache (those keep their original expiry).
 */
export class Overlay<V> {
  readonly #entries = new Map<string, Entry<V>>();

  get(key: string): V | undefined {
    return this.#entries.get(key)?.value;
  }

  isChanged(key: string): boolean {
    return this.#entries.get(key)?.origin === "changed";
  }

  /** An entry as found in the cache or in ClickHouse. */
  put(key: string, value: V, origin: "cached" | "loaded"): void {
    this.#entries.set(key, { value, origin });
  }

  change(key: string, value: V): void {
    this.#entries.set(key, { value, origin: "changed" });
  }

  keys(): IterableIterator<string> {
    return this.#entries.keys();
  }

  /** Every entry (or those of the given origins), as [key, value]. An array: a generator costs several times more per entry. */
  entries(origins?: readonly Origin[]): [string, V][] {
    const found: [string, V][] = [];
    for (const [key, entry] of this.#entries) {
      if (origins === undefined || origins.includes(entry.origin)) found.push([key, entry.value]);
    }
    return found;
  }
}
