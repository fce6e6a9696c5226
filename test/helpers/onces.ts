import type { Component } from "../../src/identity/component";
import { compareTuples, type FactRow, type FirstOnce, onceKey } from "../../src/identity/facts";
import type { OnceRequest } from "../../src/identity/gather";

/** What `loadOnces` reads, from facts in memory: the earliest `$set_once` of the key by the IDs after `after`. */
export function earliestOnce(facts: readonly FactRow[], { ids, key, after }: OnceRequest): FirstOnce | undefined {
  const members = new Set(ids);
  let earliest: FirstOnce | undefined;
  for (const fact of facts) {
    if (fact.kind !== "once" || !members.has(fact.distinct_id) || onceKey(fact.name) !== key) continue;
    const once = fact.first_once;
    if (compareTuples([once[1], once[2]], after) <= 0) continue;
    if (earliest === undefined || compareTuples(once, earliest) < 0) earliest = once;
  }
  return earliest;
}

/** The components, told what they lack of `$set_once`s after an `$unset` (`fillOnceGaps`), from these facts. */
export function settled(parts: Component[], facts: readonly FactRow[]): Component[] {
  for (const component of parts) {
    for (const [key, after] of component.onceGaps()) {
      component.knowOnces(key, after, earliestOnce(facts, { ids: [...component.members], key, after }));
    }
  }
  return parts;
}
