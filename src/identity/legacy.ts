import type { ClickHouse } from "../storage";
import type { Component } from "./component";
import { EPOCH, type FactRow, identityFact, propertyFact, type When } from "./facts";
import { isPersonless, type Link } from "./person";
import { loadPersons } from "./person-store";

/**
 * Facts for persons stored without any: by version 0.1.0, which wrote persons and links directly, or by a tool
 * that writes these tables. A linked ID whose person no `born` fact of its component names is on such a person,
 * and so is a linked ID of `visited` that is in no component at all: a person of that one ID, which has no facts
 * and shares its person with no other ID (without its facts, such a person was taken for a new one: its properties
 * and birth were lost, and a merge left it live, its events on it).
 * Its facts say what the stored rows say: the person was born to its primary ID (or, if that ID is on another
 * person now, the first of its IDs) at its `created_at`, every ID on it joined that one, it was identified if
 * it is, and each property was `$set` at `created_at`. Written once, they make the person as any other, so it
 * takes part in merges by the same rules: a migration done the first time an event touches the person, with no
 * pass over the tables at startup.
 */
export async function legacyFacts(
  db: ClickHouse,
  read: readonly Component[],
  current: ReadonlyMap<string, Link>,
  visited: Iterable<string>,
): Promise<FactRow[]> {
  const orphans = new Map<string, string[]>();
  const orphan = (id: string, births?: Component["births"]) => {
    const link = current.get(id);
    if (link === undefined || isPersonless(link) || births?.has(link.personId)) return;
    const { personId } = link;
    orphans.set(personId, [...(orphans.get(personId) ?? []), id]);
  };
  const members = new Set<string>();
  for (const component of read) {
    for (const id of component.members) {
      members.add(id);
      orphan(id, component.births);
    }
  }
  for (const id of visited) if (!members.has(id)) orphan(id);
  if (orphans.size === 0) return [];
  const persons = await loadPersons(db, [...orphans.keys()]);
  const facts: FactRow[] = [];
  for (const [personId, members] of orphans) {
    const person = persons.get(personId);
    const holder = person !== undefined && members.includes(person.distinctId) ? person.distinctId : members.sort()[0]!;
    const at: When = [person?.createdAt ?? EPOCH, 0];
    facts.push(identityFact("born", holder, personId, at));
    for (const id of members) {
      if (id !== holder) facts.push(identityFact("joined", id, holder, at), identityFact("joined", holder, id, at));
    }
    if (person === undefined) continue;
    if (person.isIdentified) facts.push(identityFact("identified", holder, "", at));
    for (const [key, value] of Object.entries(JSON.parse(person.properties) as Record<string, unknown>)) {
      facts.push(propertyFact(holder, key, at, [0, JSON.stringify(value)], undefined));
    }
  }
  return facts;
}
