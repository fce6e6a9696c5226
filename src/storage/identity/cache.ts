interface Entry<V> {
  readonly value: V;
  readonly expiresAt: number;
}

/**
 * A bounded map that forgets: no entry is returned more than `ttlMs` after it was set, and past `capacity` the
 * entry set longest ago goes first. Every entry lives the same time, so that one is also the next to expire,
 * and a read need not reorder anything (a Map keeps insertion order). Every operation is O(1).
 */
export class TtlCache<K, V> {
  readonly #entries = new Map<K, Entry<V>>();

  constructor(
    readonly capacity: number,
    readonly ttlMs: number,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  get(key: K, now: number = Date.now()): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > now) return entry.value;
    this.#entries.delete(key);
    return undefined;
  }

  set(key: K, value: V, now: number = Date.now()): void {
    this.#entries.delete(key); // re-inserted at the end: set order stays expiry order
    this.#entries.set(key, { value, expiresAt: now + this.ttlMs });
    if (this.#entries.size > this.capacity) this.#entries.delete(this.#entries.keys().next().value as K);
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }
}
