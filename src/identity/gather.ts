import type { Component } from "./component";
import type { FactRow, FirstOnce, When } from "./facts";
import type { Link } from "./person";

/** One read around some distinct IDs (`loadNeighbourhood`): links of the IDs on their persons, and their facts. */
export interface Neighbourhood {
  readonly links: ReadonlyMap<string, Link>;
  readonly facts: readonly FactRow[];
}

/** What `gatherFacts` read: every fact once, the pairs of IDs found on one person, and every ID it visited. */
export interface Gathered {
  readonly facts: FactRow[];
  readonly together: [string, string][];
  readonly visited: ReadonlySet<string>;
}

/**
 * Every fact of the components `ids` belong to, a neighbourhood at a time (`read`): the IDs' facts and links,
 * then those of every ID they lead to (joined to them, or on a person they were ever on), until no new ID turns
 * up. `current` gets the stored link of each ID read (and loses those that have none). An ID of which the reads
 * found no fact at all, though the flush has just written some (`written`: a replica that is behind), keeps the
 * flush's own.
 */
export async function gatherFacts(
  read: (frontier: string[]) => Promise<Neighbourhood> | Neighbourhood,
  ids: ReadonlySet<string>,
  current: Map<string, Link>,
  written: readonly FactRow[],
): Promise<Gathered> {
  const visited = new Set<string>();
  const facts: FactRow[] = [];
  const together: [string, string][] = [];
  for (let frontier = [...ids]; frontier.length > 0; ) {
    const { links: shared, facts: near } = await read(frontier);
    for (const id of frontier) current.delete(id);
    for (const [id, link] of shared) current.set(id, link);
    for (const onOnePerson of Map.groupBy(shared.keys(), (id) => shared.get(id)!.personId).values()) {
      for (const id of onOnePerson.slice(1)) together.push([onOnePerson[0]!, id]);
    }
    const unvisited = [...new Set([...frontier, ...shared.keys()])].filter((id) => !visited.has(id));
    for (const id of unvisited) visited.add(id);
    const reading = new Set(unvisited);
    const found = near.filter((fact) => reading.has(fact.distinct_id)); // an ID's facts are read once
    for (const fact of found) facts.push(fact); // not push(...found): a spread of a million overflows the stack
    frontier = [...new Set(found.filter((f) => f.kind === "joined" && !visited.has(f.name)).map((f) => f.name))];
  }
  const readIds = new Set(facts.map((fact) => fact.distinct_id));
  for (const fact of written) if (ids.has(fact.distinct_id) && !readIds.has(fact.distinct_id)) facts.push(fact);
  return { facts, together, visited };
}

/** A key of a person whose earliest `$set_once` after `after` (its latest write, an `$unset`) is wanted. */
export interface OnceRequest {
  readonly ids: readonly string[];
  readonly key: string;
  readonly after: When;
}

/**
 * Reads what the components need to know of `$set_once`s after an `$unset` (`Component.onceGaps`) and tells
 * them: every derivation of a person, with whatever facts in view, then gives the same properties.
 */
export async function fillOnceGaps(
  components: readonly Component[],
  read: (requests: readonly OnceRequest[]) => Promise<readonly (FirstOnce | undefined)[]> | (FirstOnce | undefined)[],
): Promise<void> {
  const asked: [Component, OnceRequest][] = components.flatMap((component) =>
    component
      .onceGaps()
      .map(([key, after]): [Component, OnceRequest] => [component, { ids: [...component.members], key, after }]),
  );
  if (asked.length === 0) return;
  const found = await read(asked.map(([, request]) => request));
  for (const [index, [component, { key, after }]] of asked.entries()) component.knowOnces(key, after, found[index]);
}
