import type { Component } from "./component";
import type { Link, Person } from "./person";
import { type DistinctIdRow, linkRow, type OverrideRow, overrideRow, type PersonRow, personRow } from "./rows";

/** What a component, derived from its facts, writes. */
export interface ComponentRows {
  readonly person: Person;
  /** Where each of its IDs links. */
  readonly link: Link;
  /** The person, then (where a link is written) each person merged away, deleted. */
  readonly persons: readonly PersonRow[];
  readonly overrides: readonly OverrideRow[];
  readonly links: readonly DistinctIdRow[];
}

/**
 * The rows a component writes, given each ID's `stored` link: always its person (its version counts every fact);
 * each link that is missing, elsewhere or older (a link below this version was derived from fewer facts: rewritten
 * even if it points here already, so that a slower instance's write from still fewer cannot outrank it); and, only
 * where a link is written, the persons merged away with their overrides. Those change only when the component's
 * identity facts do, which is when its links do, and they go in before the links, so while every link is stored as
 * derived, so are they: a `$set` on a person that absorbed thousands writes one row. The survivor's own override
 * points back at it: a person merged away by a derivation that had not seen its earliest birth can turn out to
 * be the survivor. Undefined for facts with no birth (written by something else): left as they are.
 */
export function componentRows(
  component: Component,
  stored: (id: string) => Link | undefined,
): ComponentRows | undefined {
  const person = component.person();
  if (person === undefined) return undefined;
  const link: Link = { personId: person.id, version: component.linkVersion };
  const links: DistinctIdRow[] = [];
  for (const id of component.members) {
    const held = stored(id);
    if (held === undefined || held.personId !== person.id || held.version < link.version) links.push(linkRow(id, link));
  }
  const persons: PersonRow[] = [personRow(person)];
  const overrides: OverrideRow[] = [];
  const away = links.length === 0 ? [] : component.mergedAway(person);
  if (away.length > 0) overrides.push(overrideRow(person, person));
  for (const merged of away) {
    persons.push(personRow(merged));
    overrides.push(overrideRow(merged, person));
  }
  return { person, link, persons, overrides, links };
}
