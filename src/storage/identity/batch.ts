import type { Timestamp } from "../../event";
import { Overlay } from "./overlay";
import { type Link, type Person, personIdFor } from "./person";
import { mergedProperties, type PersonIntent, updatedProperties } from "./person-rules";
import type { VersionClock } from "./version-clock";

type Draft = { -readonly [K in keyof Person]: Person[K] };

/**
 * One batch's view of the person graph and the identity rules (docs/identity.md#rules) applied to it, one event at a time,
 * in order. It reads nothing itself: the resolver fills `links` and `persons` before `apply`, and afterwards
 * hands over the distinct IDs that ClickHouse still has on the persons this batch merged away.
 */
export class IdentityBatch {
  readonly links = new Overlay<Link>();
  readonly persons = new Overlay<Person>();
  /** Each person this batch merged away, with the person it went into. */
  readonly #mergedInto = new Map<string, string>();

  constructor(private readonly clock: VersionClock) {}

  /** Applies one event and returns the person it belongs to. */
  apply({ event, linkedId, updates, identifies }: PersonIntent): string {
    if (linkedId !== undefined) this.#link(event.distinctId, linkedId, event.timestamp);
    // An event that changes no person needs only its person's id, which its link holds (persons are written
    // before links, so a stored link's person is stored too): the resolver does not read that person at all.
    const linked = this.links.get(event.distinctId);
    if (linked !== undefined && updates === undefined && !identifies) return linked.personId;
    const person = this.#personOf(event.distinctId, event.timestamp);

    const properties = updates === undefined ? undefined : updatedProperties(person.properties, updates);
    const becomesIdentified = identifies && !person.isIdentified;
    if (properties !== undefined || becomesIdentified) {
      const draft = this.#edit(person.id);
      if (properties !== undefined) draft.properties = properties;
      if (becomesIdentified) {
        draft.isIdentified = true;
        draft.distinctId = event.distinctId;
      }
    }
    return person.id;
  }

  /** The persons this batch merged away. ClickHouse may hold distinct IDs of theirs that the batch never read. */
  mergedAway(): string[] {
    return [...this.#mergedInto.keys()];
  }

  /**
   * Moves the distinct IDs ClickHouse still has on merged-away persons to where those persons went in the end.
   * An ID the batch changed itself is already where it belongs.
   */
  moveStragglers(found: ReadonlyMap<string, Link>): void {
    for (const [distinctId, link] of found) {
      if (this.links.isChanged(distinctId)) continue;
      this.links.put(distinctId, link, "loaded");
      this.#setLink(distinctId, this.#survivorOf(link.personId));
    }
  }

  /** Persons to write: every one the batch created or changed, each at its new version. */
  changedPersons(): Person[] {
    return this.persons.entries(["changed"]).map(([, person]) => person);
  }

  /**
   * Links to write: every link this batch created or changed, with its new version. Every event's distinct ID
   * has its link (identity rule 4): a link the batch did not change came from ClickHouse, or from the cache,
   * which holds only what was written, so it is stored already with this very person and version. Writing it
   * again would add an identical row and change no read; an earlier version re-written from a stale cache loses
   * to the newer one anyway.
   */
  linksToWrite(): [string, Link][] {
    return this.links.entries(["changed"]);
  }

  /** `$identify` / `$create_alias`: puts `other` on the same person as `target`, merging if need be. */
  #link(target: string, other: string, timestamp: Timestamp): void {
    const targetPerson = this.links.get(target)?.personId;
    const otherPerson = this.links.get(other)?.personId;
    if (targetPerson === undefined && otherPerson === undefined) {
      this.#setLink(other, this.#personOf(target, timestamp).id);
    } else if (otherPerson === undefined) {
      this.#setLink(other, targetPerson!);
    } else if (targetPerson === undefined) {
      this.#setLink(target, otherPerson);
    } else if (targetPerson !== otherPerson) {
      this.#merge(otherPerson, this.#personOf(target, timestamp).id);
    }
  }

  /**
   * Moves every distinct ID of `fromId` the batch knows to `intoId` and folds the properties in (the survivor's
   * values win), then marks `fromId` deleted. The IDs it does not know move in `moveStragglers`.
   */
  #merge(fromId: string, intoId: string): void {
    const onFrom = this.links.entries().filter(([, link]) => link.personId === fromId);
    for (const [id] of onFrom) this.#setLink(id, intoId);
    this.#mergedInto.set(fromId, intoId);

    const from = this.persons.get(fromId);
    if (from === undefined) return;
    const into = this.#edit(intoId);
    into.properties = mergedProperties(from.properties, into.properties);
    if (from.createdAt < into.createdAt) into.createdAt = from.createdAt;
    if (from.isIdentified && !into.isIdentified) {
      into.isIdentified = true;
      into.distinctId = from.distinctId;
    }
    this.#edit(fromId).isDeleted = true;
  }

  /** Where a merged-away person's IDs end up: follows the batch's merges to the person that survived them. */
  #survivorOf(personId: string): string {
    const visited = new Set<string>();
    let id = personId;
    for (
      let next = this.#mergedInto.get(id);
      next !== undefined && !visited.has(next);
      next = this.#mergedInto.get(id)
    ) {
      visited.add(id);
      id = next;
    }
    return id;
  }

  /** The person a distinct ID belongs to; a new ID gets a new person, with its deterministic id. */
  #personOf(distinctId: string, timestamp: Timestamp): Person {
    const personId = this.links.get(distinctId)?.personId ?? personIdFor(distinctId);
    let person = this.persons.get(personId);
    if (person === undefined) {
      person = {
        id: personId,
        distinctId,
        properties: "{}",
        isIdentified: false,
        isDeleted: false,
        createdAt: timestamp,
        version: this.clock.next(),
      };
      this.persons.change(personId, person);
    }
    this.#setLink(distinctId, personId);
    return person;
  }

  #setLink(distinctId: string, personId: string): void {
    const current = this.links.get(distinctId);
    if (current?.personId === personId) return;
    this.links.change(distinctId, { personId, version: this.clock.next(current?.version) });
  }

  /** A writable copy of a person, with its next version; the first edit in a batch makes the copy. */
  #edit(personId: string): Draft {
    const person = this.persons.get(personId)!;
    if (this.persons.isChanged(personId)) return person as Draft;
    const draft: Draft = { ...person, version: this.clock.next(person.version) };
    this.persons.change(personId, draft);
    return draft;
  }
}
