import { fail } from "../contract";

/** One request's share of the pending bytes. */
export interface Claim {
  /** Raises the claim to `bytes` (the body so far); throws a retryable 503 when that would pass the limit. */
  growTo(bytes: number): void;
  /** Gives the bytes back, once the request is answered. */
  release(): void;
}

/**
 * The body bytes of the requests being handled at once: read, checked, or waiting for their write. Parsed events
 * take 10–40 times their JSON text in memory, so this, not the number of requests, is what bounds the memory of
 * many large batches arriving together (`MAX_PENDING_BYTES`). Past it a request is refused with a retryable 503.
 * A request is always admitted when no other holds any bytes, so no batch within `MAX_BATCH_BYTES` is refused
 * forever.
 */
export class PendingBytes {
  #held = 0;

  constructor(readonly maxBytes: number) {}

  /** Bytes claimed by requests in flight. */
  get held(): number {
    return this.#held;
  }

  claim(): Claim {
    let own = 0;
    return {
      growTo: (bytes) => {
        if (bytes <= own) return;
        const others = this.#held - own;
        if (others > 0 && others + bytes > this.maxBytes) throw fail.busy();
        this.#held += bytes - own;
        own = bytes;
      },
      release: () => {
        this.#held -= own;
        own = 0;
      },
    };
  }
}
