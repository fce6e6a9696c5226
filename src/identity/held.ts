import { Component } from "./component";
import type { FactRow } from "./facts";

/**
 * What a flush holds for certain of a distinct ID's person before its facts go in: the person's facts folded
 * (a sole writer's cached person, which is every fact stored of it), `"none"` when no fact of the ID can exist
 * (an ID new to a complete link cache, or on a personless link), or undefined when it cannot tell (another
 * writer may have written facts it has not read).
 */
export type HeldOf = (distinctId: string) => Component | "none" | undefined;

/**
 * The persons a flush's facts go to, as far as it holds them for certain, with the facts the flush has written so
 * far folded in: what `factsOf` compares an event's updates with, so that it writes only what changes something.
 * A person held is a copy of the cached one (the cache learns the flush only once its rows are written); two IDs
 * of one person share it, and IDs the flush joins share theirs from then on. A person joined to one it does not
 * hold is no longer held.
 */
export class Held {
  readonly #of: HeldOf;
  /** Each ID's person as held (null: not held). */
  readonly #byId = new Map<string, Component | null>();
  /** The flush's copy of each cached person. */
  readonly #copies = new Map<Component, Component>();

  constructor(of: HeldOf) {
    this.#of = of;
  }

  /** The ID's person with the flush's facts so far, or undefined if it is not held for certain. */
  of(distinctId: string): Component | undefined {
    let person = this.#byId.get(distinctId);
    if (person === undefined) {
      const cached = this.#of(distinctId);
      if (cached === undefined) person = null;
      else if (cached === "none") person = new Component();
      else {
        person = this.#copies.get(cached) ?? cached.clone();
        this.#copies.set(cached, person);
      }
      this.#byId.set(distinctId, person);
    }
    return person ?? undefined;
  }

  /** The flush put `a` and `b` on one person: both see the facts of both from now on. */
  join(a: string, b: string): void {
    const [x, y] = [this.of(a), this.of(b)];
    if (x === y) return;
    const joined = x === undefined || y === undefined ? null : x;
    if (joined !== null) joined.absorb(y!);
    for (const [id, person] of this.#byId) if (person === x || person === y) this.#byId.set(id, joined);
    this.#byId.set(a, joined);
    this.#byId.set(b, joined);
  }

  /** Folds facts the flush writes into the persons they describe. */
  add(facts: readonly FactRow[]): void {
    for (const fact of facts) this.of(fact.distinct_id)?.add(fact);
  }
}
