import { Component } from "./component";
import type { FactRow } from "./facts";

/**
 * What a flush holds for certain of a distinct ID's person before its facts go in: the person's facts folded
 * (a sole writer's cached or just-read person, which is every fact stored of it), `"none"` when no fact of the ID
 * can exist (an ID new to a complete link cache, or on a personless link), or undefined when it cannot tell
 * (another writer may have written facts it has not read).
 */
export type HeldOf = (distinctId: string) => Component | "none" | undefined;

/** A person as the flush holds it: the one it was given until the flush's first fact of it, then its own copy. */
interface Person {
  view: Component;
  copied: boolean;
  /** Set once the flush joined it to another: the person that holds it from then on (null: one not held). */
  into?: Person | null;
}

/**
 * The persons a flush's facts go to, as far as it holds them for certain, with the facts the flush has written so
 * far folded in: what `factsOf` compares an event's updates with, so that it writes only what changes something.
 * A person given is copied before the flush's first fact of it (the cache learns the flush only once its rows are
 * written); two IDs of one person share it, and IDs the flush joins share theirs from then on, named already or
 * not. A person joined to one it does not hold is no longer held.
 */
export class Held {
  readonly #of: HeldOf;
  /** Each ID's person as first found (null: not held); `into` leads to the one that holds it now. */
  readonly #byId = new Map<string, Person | null>();
  /** The person held for each one given, so that its IDs share it. */
  readonly #given = new Map<Component, Person>();

  constructor(of: HeldOf) {
    this.#of = of;
  }

  /** The ID's person with the flush's facts so far, or undefined if it is not held for certain. */
  of(distinctId: string): Component | undefined {
    return this.#person(distinctId)?.view;
  }

  /** The flush put `a` and `b` on one person: both see the facts of both from now on. */
  join(a: string, b: string): void {
    const [x, y] = [this.#person(a), this.#person(b)];
    if (x === y) return;
    const joined = x === null || y === null ? null : x;
    if (joined !== null) this.#own(joined).absorb(y!.view);
    for (const person of [x, y]) if (person !== null && person !== joined) person.into = joined;
  }

  /** Folds facts the flush writes into the persons they describe. */
  add(facts: readonly FactRow[]): void {
    for (const fact of facts) {
      const person = this.#person(fact.distinct_id);
      if (person !== null) this.#own(person).add(fact);
    }
  }

  #person(distinctId: string): Person | null {
    let person = this.#byId.get(distinctId);
    if (person === undefined) {
      const given = this.#of(distinctId);
      if (given === undefined) person = null;
      else if (given === "none") person = { view: new Component(), copied: true };
      else {
        person = this.#given.get(given) ?? { view: given, copied: false };
        this.#given.set(given, person);
      }
      this.#byId.set(distinctId, person);
    }
    while (person !== null && person.into !== undefined) person = person.into;
    return person;
  }

  /** The person's own copy, made at its first change. */
  #own(person: Person): Component {
    if (!person.copied) {
      person.view = person.view.clone();
      person.copied = true;
    }
    return person.view;
  }
}
