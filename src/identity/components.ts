import { Component } from "./component";
import type { FactRow } from "./facts";

/**
 * Splits facts into the components they describe: IDs joined by a `joined` fact, or by `together` (pairs known
 * to be on one person, such as IDs sharing a stored link), are one component: a union-find over distinct IDs, each
 * component then folding the facts of its own.
 */
export function components(
  facts: readonly FactRow[],
  together: readonly (readonly [string, string])[] = [],
): Component[] {
  const parent = new Map<string, string>();
  const find = (id: string): string => {
    let root = id;
    for (let up = parent.get(root); up !== undefined && up !== root; up = parent.get(root)) root = up;
    for (let at = id; at !== root; ) {
      const up = parent.get(at)!;
      parent.set(at, root);
      at = up;
    }
    return root;
  };
  const union = (a: string, b: string) => {
    if (!parent.has(a)) parent.set(a, a);
    if (!parent.has(b)) parent.set(b, b);
    const [ra, rb] = [find(a), find(b)];
    if (ra !== rb) parent.set(ra, rb);
  };
  for (const fact of facts) union(fact.distinct_id, fact.kind === "joined" ? fact.name : fact.distinct_id);
  for (const [a, b] of together) union(a, b);
  const byRoot = new Map<string, Component>();
  const componentOf = (id: string) => {
    const root = find(id);
    const component = byRoot.get(root) ?? new Component();
    byRoot.set(root, component);
    return component;
  };
  for (const fact of facts) componentOf(fact.distinct_id).add(fact);
  for (const pair of together) for (const id of pair) componentOf(id).members.add(id);
  return [...byRoot.values()];
}
