import type { Component } from "./component";
import type { FactRow } from "./facts";
import type { Link } from "./person";
import type { PersonIntent, PersonRules } from "./person-rules";
import type { DistinctIdRow, OverrideRow, PersonRow } from "./rows";

// What the resolver (resolver.ts) is given and gives back.

export interface IdentityOptions extends PersonRules {
  /**
   * Whether this resolver is the only writer of its database. Then its link cache holds exactly what is stored,
   * never expires, and, once it holds every stored link, tells a new ID from a known one without a read.
   * Otherwise links are cached for `cacheTtlMs`. A sole writer caches persons too, as their facts folded, since
   * what it derived from the facts it read and wrote are all the facts there are.
   */
  readonly soleWriter: boolean;
  /** With other writers: how long a cached link may be used for events that change nothing (the staleness bound). */
  readonly cacheTtlMs: number;
  /** Most links cached. */
  readonly cacheCapacity: number;
  /** Sole writer only: about how much memory cached persons (their facts, folded) may take. */
  readonly personCacheBytes: number;
}

/** A flush's identity, before its facts are written: the facts to write, and what it knew of its IDs' links. */
export interface Prepared {
  readonly facts: readonly FactRow[];
  readonly intents: readonly PersonIntent[];
  /** The link of every distinct ID the events name that had one, from the cache or read. */
  readonly known: ReadonlyMap<string, Link>;
  /**
   * Sole writer: the persons it did not cache, read before the facts (`#holdPersons`), by each of their IDs (an
   * empty one for an ID read and found to have no facts); `"none"` for an ID known without a read to have none.
   */
  readonly read: ReadonlyMap<string, Component | "none">;
}

/** What a repair found to write: persons and links behind the facts they are derived from. */
export interface Repair {
  readonly persons: readonly PersonRow[];
  readonly overrides: readonly OverrideRow[];
  readonly distinctIds: readonly DistinctIdRow[];
}

/** What a flush resolved to, once its facts are written: each event's person and the rows to write. */
export interface Resolution {
  readonly personIds: readonly string[];
  readonly persons: readonly PersonRow[];
  /** Where the events of each person merged away now belong (`person_overrides`). */
  readonly overrides: readonly OverrideRow[];
  readonly distinctIds: readonly DistinctIdRow[];
  /** Each distinct ID the flush resolved, with its link as written. */
  readonly links: ReadonlyMap<string, Link>;
  /** The persons derived, as their facts folded. */
  readonly derived: readonly Component[];
}
