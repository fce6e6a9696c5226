interface Entry<V> {
  readonly value: V;
  readonly expiresAt: number;
}

/**
 * A bounded map that forgets: least recently used entries go first once `capacity` is reached, and no entry
 * is returned more than `ttlMs` after it was set. Every operation is O(1) (a Map keeps insertion order).
 */
export class LruCache<K, V> {
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
    this.#entries.delete(key);
    if (entry.expiresAt <= now) return undefined;
    this.#entries.set(key, entry);
    return entry.value;
  }

  set(key: K, value: V, now: number = Date.now()): void {
    this.#entries.delete(key);
    this.#entries.set(key, { value, expiresAt: now + this.ttlMs });
    if (this.#entries.size > this.capacity) this.#entries.delete(this.#entries.keys().next().value as K);
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }
}
