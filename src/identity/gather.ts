import type { FactRow } from "./facts";
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
    facts.push(...found);
    frontier = [...new Set(found.filter((f) => f.kind === "joined" && !visited.has(f.name)).map((f) => f.name))];
  }
  const readIds = new Set(facts.map((fact) => fact.distinct_id));
  facts.push(...written.filter((fact) => ids.has(fact.distinct_id) && !readIds.has(fact.distinct_id)));
  return { facts, together, visited };
}
