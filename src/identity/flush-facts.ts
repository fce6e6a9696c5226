import { churns, initialKey, type PersonLocation } from "./automatic";
import type { Component } from "./component";
import {
  bornFact,
  compareTuples,
  type FactRow,
  identityFact,
  locationFact,
  onceFact,
  propertyFact,
  type When,
} from "./facts";
import { Held, type HeldOf } from "./held";
import { isPersonless, type Link, personIdFor } from "./person";
import type { PersonIntent, PersonUpdates } from "./person-rules";

// Events → facts: what a flush writes of what its events say about persons (docs/scale-out.md#facts), and only
// what can change one.

/** The location fact of an event whose explicit updates are `explicit`, or undefined if they leave nothing of it. */
function locationFactOf(distinctId: string, at: When, location: PersonLocation, explicit: PersonUpdates | undefined) {
  const set: Record<string, string | number> = {};
  const setOnce: Record<string, string | number> = {};
  const unset = new Set(explicit?.unset);
  for (const [key, value] of Object.entries(location)) {
    if (explicit?.set?.[key] === undefined && !unset.has(key)) set[key] = value;
    if (explicit?.setOnce?.[initialKey(key)] === undefined) setOnce[initialKey(key)] = value;
  }
  const text = (object: object) => (Object.keys(object).length === 0 ? "" : JSON.stringify(object));
  if (Object.keys(set).length + Object.keys(setOnce).length === 0) return undefined;
  return locationFact(distinctId, at, text(set), text(setOnce));
}

/**
 * The facts of a flush's events. `linkOf` tells the link of each ID that had one before the flush (an ID an
 * earlier event of the flush linked counts as linked from then on); `arrival` stamps each event; `heldOf` tells
 * what the flush holds for certain of an ID's person (`held.ts`; by default nothing).
 *
 * An event whose distinct ID has no link creates its person (`born`), unless it joins the ID to one that has:
 * `$identify(user ← anon)` with neither known creates the user's person and joins anon to it; with one known,
 * joins the other to it. Two IDs already on one person need no `joined`: facts that join them exist already.
 * A personless event writes no fact; an ID on a personless link (`PERSONLESS`) is born to it by its first event
 * that is not, so that events stored with that person find the one it becomes part of. An event whose updates
 * count only for a new person (`updatesNewPersonOnly`, an `$exception`) writes them only with its `born`.
 *
 * What is written is what can change a person (docs/scale-out.md#what-a-flush-does-not-write): a fact the person
 * held already dominates (`Component.changedBy`) is left out, and so are automatic properties that repeat what it
 * holds; several rows of one fact in a flush go in as one (`coalesced`).
 */
export function factsOf(
  intents: readonly PersonIntent[],
  linkOf: (distinctId: string) => Link | undefined,
  arrival: () => number,
  heldOf: HeldOf = () => undefined,
): FactRow[] {
  const facts: FactRow[] = [];
  const held = new Held(heldOf);
  const linkedHere = new Set<string>();
  const personOf = (id: string) => {
    const link = linkOf(id);
    return link === undefined || isPersonless(link) ? undefined : link.personId;
  };
  const linked = (id: string) => linkedHere.has(id) || personOf(id) !== undefined;
  const personless = (id: string) => {
    const link = linkOf(id);
    return !linkedHere.has(id) && link !== undefined && isPersonless(link);
  };
  for (const intent of intents) {
    const { event, linkedId, identifies, personless: noProfile } = intent;
    if (noProfile) continue;
    const { distinctId } = event;
    const at: When = [event.timestamp, arrival()];
    const own: FactRow[] = [];
    const born = (!linked(distinctId) && (linkedId === undefined || !linked(linkedId))) || personless(distinctId);
    if (born)
      own.push(bornFact(distinctId, linkOf(distinctId)?.personId ?? personIdFor(distinctId), at, intent.creator));
    if (linkedId !== undefined && personless(linkedId)) {
      // stamped after the event's own ID: of two persons born by one `$identify`, the identified one survives
      own.push(bornFact(linkedId, linkOf(linkedId)!.personId, [at[0], arrival()], intent.creator));
    }
    linkedHere.add(distinctId);
    if (linkedId !== undefined) {
      const person = personOf(distinctId);
      if (person === undefined || person !== personOf(linkedId)) {
        own.push(identityFact("joined", distinctId, linkedId, at), identityFact("joined", linkedId, distinctId, at));
      }
      linkedHere.add(linkedId);
      held.join(distinctId, linkedId);
    }
    const person = held.of(distinctId);
    const changing = (fact: FactRow) => person === undefined || person.changedBy(fact);
    if (identifies) own.push(...[identityFact("identified", distinctId, "", at)].filter(changing));
    if (born || !intent.updatesNewPersonOnly) {
      // a property fact goes in with its once fact: a lone once fact counts in no version, nor in a cached fold
      own.push(
        ...explicitFacts(distinctId, at, intent.updates, person).filter((f) => changing(f) || f.first_once[0] === 0),
      );
      own.push(...automaticFacts(intent, at, person, own.length > 0));
    }
    held.add(own);
    facts.push(...own);
  }
  return coalesced(facts);
}

/**
 * The facts of an event's own `$set`, `$set_once` and `$unset`: a `property` fact a key, a `once` a `$set_once`,
 * but for a `$set_once` of a key its person holds (`person`) from an earlier one: it changes no value (posthog-js
 * sends the same first-touch keys with every page view of a signed-in user).
 */
function explicitFacts(
  distinctId: string,
  at: When,
  updates: PersonUpdates | undefined,
  person: Component | undefined,
): FactRow[] {
  if (updates === undefined) return [];
  const writes = new Map<string, readonly [0 | 1, string]>();
  for (const key in updates.set) writes.set(key.toWellFormed(), [0, JSON.stringify(updates.set[key])]);
  for (const key of updates.unset ?? []) writes.set(key.toWellFormed(), [1, ""]);
  const onces = new Map<string, string>();
  for (const key in updates.setOnce) {
    const name = key.toWellFormed();
    if (person?.holdsOnceBefore(name, at) !== true) onces.set(name, JSON.stringify(updates.setOnce[key]));
  }
  const facts: FactRow[] = [];
  for (const key of new Set([...writes.keys(), ...onces.keys()])) {
    facts.push(propertyFact(distinctId, key, at, writes.get(key), onces.get(key)));
  }
  for (const [key, value] of onces) facts.push(onceFact(distinctId, key, at, value));
  return facts;
}

/**
 * The facts of an event's automatic person properties and location (`automatic.ts`), the event's own updates
 * winning a key. With its person held (`person`), PostHog's way: a key is written when its value differs from the
 * person's (a first touch when the person has none earlier), and page and device keys and the location only beside
 * something else that changes it. Without, decided from the event alone: all of them, when the event changes its
 * person (`changes`) or carries a key that does.
 */
function automaticFacts(intent: PersonIntent, at: When, person: Component | undefined, changes: boolean): FactRow[] {
  const { event, updates: explicit, automatic, location } = intent;
  if (automatic === undefined && location === undefined) return []; // nothing to write, whatever changes
  const distinctId = event.distinctId;
  const facts: FactRow[] = [];
  const riding: FactRow[] = [];
  // made only when there is one: most events unset nothing, and this runs for every event of every flush
  const unset = explicit?.unset !== undefined && explicit.unset.length > 0 ? new Set(explicit.unset) : undefined;
  /** The `$set` of `key`, unless the person holds that value already (or a later one). */
  const setOf = (key: string): FactRow | undefined => {
    const json = JSON.stringify(automatic!.set[key]);
    const fact = propertyFact(distinctId, key, at, [0, json], undefined);
    return person === undefined || (!person.holdsValue(key, json) && person.changedBy(fact)) ? fact : undefined;
  };
  const churning: string[] = [];
  for (const key in automatic?.set) {
    if (explicit?.set?.[key] !== undefined || unset?.has(key) === true) continue;
    // page and device keys only matter if something else changes: compared then
    if (person !== undefined && churns(key)) churning.push(key);
    else {
      const fact = setOf(key);
      if (fact !== undefined) (person === undefined ? riding : facts).push(fact);
    }
  }
  for (const key in automatic?.setOnce) {
    if (explicit?.setOnce?.[key] !== undefined || person?.holdsOnceBefore(key, at)) continue;
    const json = JSON.stringify(automatic.setOnce[key]);
    (person === undefined ? riding : facts).push(
      propertyFact(distinctId, key, at, undefined, json),
      onceFact(distinctId, key, at, json),
    );
  }
  const changed =
    person === undefined
      ? changes || explicit !== undefined || automatic?.changes === true
      : changes || facts.length > 0;
  if (!changed) return [];
  for (const key of churning) {
    const fact = setOf(key);
    if (fact !== undefined) riding.push(fact);
  }
  const located = location === undefined ? undefined : locationFactOf(distinctId, at, location, explicit);
  if (
    located !== undefined &&
    (person === undefined || (!person.holdsLocation(located) && person.changedBy(located)))
  ) {
    riding.push(located);
  }
  return [...facts, ...riding];
}

/**
 * The rows as the engine would collapse them: one a `(distinct_id, kind, name)`, its columns folded by their own
 * functions (`at` and `first_once` the earliest, `last_write` and `last_once` the latest, `writes` the sum). Folds
 * of these and of the rows apart agree, versions included, so a flush writes no row it would merge away anyway.
 */
export function coalesced(facts: readonly FactRow[]): FactRow[] {
  // by ID, then kind and name: no key text made for every fact; `once` facts are named by their time, unique
  const byId = new Map<string, Map<string, number>>();
  const rows: FactRow[] = [];
  for (const fact of facts) {
    if (fact.kind === "once") {
      rows.push(fact);
      continue;
    }
    const seenOfId = byId.get(fact.distinct_id) ?? new Map<string, number>();
    byId.set(fact.distinct_id, seenOfId);
    const name = fact.kind === "property" ? fact.name : `${fact.kind}\u0000${fact.name}`;
    const index = seenOfId.get(name);
    if (index === undefined) {
      seenOfId.set(name, rows.push(fact) - 1);
      continue;
    }
    const seen = rows[index]!;
    rows[index] = {
      ...seen,
      at: compareTuples(fact.at, seen.at) < 0 ? fact.at : seen.at,
      last_write: compareTuples(fact.last_write, seen.last_write) > 0 ? fact.last_write : seen.last_write,
      first_once: compareTuples(fact.first_once, seen.first_once) < 0 ? fact.first_once : seen.first_once,
      last_once: compareTuples(fact.last_once, seen.last_once) > 0 ? fact.last_once : seen.last_once,
      writes: seen.writes + fact.writes,
    };
  }
  return rows;
}
