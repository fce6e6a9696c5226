import { compareTuples, type FactRow, type FirstOnce, NO_FIRST_ONCE, onceKey, type When } from "./facts";
import type { Person } from "./person";
import {
  foldKey,
  type KeyState,
  type LocationState,
  latestWriteEarliestOnce,
  objectIn,
  onceAfter,
  propertiesJsonOf,
} from "./properties";

/**
 * Versions start here: above every version 0.1.0 wrote (microseconds since 1970, below 2^52 until the year 2112),
 * so rows computed from facts replace rows written before facts existed. JavaScript numbers are exact to 2^53.
 */
const VERSION_BASE = 2 ** 52;
/**
 * Links' versions start here: above every link version written before they counted only the facts links depend
 * on (`2^52` + identity fact rows, `identified` included; no count nears `2^50`), so those are replaced at once.
 */
const LINK_VERSION_BASE = 2 ** 52 + 2 ** 50;

interface Birth {
  readonly distinctId: string;
  readonly at: When;
  /** The uuid of the event that caused it, as a `$set_once` at its time (`NO_FIRST_ONCE`: not recorded). */
  readonly creator: FirstOnce;
}

/** Whether `a` happened before `b`: by when, then by `a`'s and `b`'s names (a person id, a distinct ID). */
function before(a: When, aName: string, b: When, bName: string): boolean {
  return compareTuples([a[0], a[1], aName], [b[0], b[1], bName]) < 0;
}

/**
 * Of two births of one person, the one that counts: the earlier (when, then distinct ID). Two of one distinct ID
 * are rows of one `born` fact, and fold as the table collapses them: the earliest time, the earliest creator.
 */
function earlierBirth(held: Birth | undefined, birth: Birth): Birth {
  if (held === undefined) return birth;
  if (held.distinctId !== birth.distinctId)
    return before(birth.at, birth.distinctId, held.at, held.distinctId) ? birth : held;
  return {
    distinctId: held.distinctId,
    at: compareTuples(birth.at, held.at) < 0 ? birth.at : held.at,
    creator: compareTuples(birth.creator, held.creator) < 0 ? birth.creator : held.creator,
  };
}

/**
 * The facts of one person: distinct IDs joined to each other directly or through others (a connected component
 * of the `joined` graph), folded. The person they make is a function of the facts alone, not of their order
 * (docs/identity.md#rules):
 *
 * - its id is the person the earliest birth created (when, then person id), its `created_at` that birth's, and
 *   so is its `$creator_event_uuid` (a `$set_once` at that time, where the birth recorded its event);
 * - it is identified once any of its IDs was, and its primary distinct ID is the earliest identified one (when,
 *   then ID), or else the ID of that earliest birth;
 * - each property is its latest `$set` or `$unset` (when; within one event `$unset` wins); if it never had one,
 *   its earliest `$set_once`; if the latest is an `$unset`, the earliest `$set_once` after it, if any (which
 *   takes the `once` facts after that `$unset`: `onceGaps` says which keys lack them, `knowOnces` adds them);
 * - a `location` fact counts as a `$set` of each key of its latest write and a `$set_once` of each key of its
 *   earliest, at its own time: a key's own facts and the location's compete by when; only its own `once` facts
 *   decide a key after an `$unset`;
 * - its version counts the rows of its facts; its links' version the rows of the facts links depend on, `born`
 *   and `joined` (not `identified`: a repeated `$identify` rewrites the person, not each of its links).
 *
 * Every fold here and in properties.ts (the latest, the earliest, the sum) is the one ClickHouse applies when it
 * collapses rows of the same fact, so folding collapsed rows and folding the rows as written agree.
 */
export class Component {
  readonly members = new Set<string>();
  /** Each person a birth created, with the earliest birth that names it. */
  readonly births = new Map<string, Birth>();
  #identified: Omit<Birth, "creator"> | undefined;
  readonly #properties = new Map<string, KeyState>();
  #location: LocationState | undefined;
  #identityWrites = 0;
  /** Rows of `born` and `joined` facts: what links are derived from. */
  #linkWrites = 0;
  #propertyWrites = 0;

  add(fact: FactRow): void {
    this.members.add(fact.distinct_id);
    switch (fact.kind) {
      case "born": {
        const birth: Birth = { distinctId: fact.distinct_id, at: fact.at, creator: fact.first_once };
        this.births.set(fact.name, earlierBirth(this.births.get(fact.name), birth));
        break;
      }
      case "joined":
        this.members.add(fact.name);
        break;
      case "identified": {
        const first = this.#identified;
        if (first === undefined || before(fact.at, fact.distinct_id, first.at, first.distinctId)) {
          this.#identified = { distinctId: fact.distinct_id, at: fact.at };
        }
        break;
      }
      case "property":
        this.#foldProperty(fact.name, { write: fact.last_write, firstOnce: fact.first_once, lastOnce: fact.last_once });
        this.#propertyWrites += fact.writes;
        return;
      case "location":
        this.#foldLocation({ write: fact.last_write, firstOnce: fact.first_once });
        this.#propertyWrites += fact.writes;
        return;
      case "once": {
        // not counted in the version: a derivation reads these only when it needs them
        const state = this.#properties.get(onceKey(fact.name));
        if (state?.floor !== undefined && onceAfter(fact.first_once, state.floor)) {
          if (compareTuples(fact.first_once, state.after!) < 0) state.after = fact.first_once;
        }
        return;
      }
    }
    this.#identityWrites += fact.writes;
    if (fact.kind !== "identified") this.#linkWrites += fact.writes;
  }

  #foldProperty(key: string, update: KeyState): void {
    const state = this.#properties.get(key);
    if (state === undefined) {
      this.#properties.set(key, { ...update });
      return;
    }
    foldKey(state, update);
  }

  #foldLocation(update: LocationState): void {
    this.#location = this.#location === undefined ? update : latestWriteEarliestOnce(this.#location, update);
  }

  /**
   * The keys whose value is the earliest `$set_once` after their latest write, an `$unset` (`[key, when]`), that
   * this component cannot tell: some `$set_once` came after it, and the `once` facts after it are not all here.
   */
  onceGaps(): [string, When][] {
    const gaps: [string, When][] = [];
    for (const [key, { write, lastOnce, floor, after }] of this.#properties) {
      if (write[0] === 0 || write[3] === 0 || lastOnce[0] === 0) continue;
      const unsetAt: When = [write[1], write[2]];
      if (!onceAfter(lastOnce, unsetAt)) continue;
      const known = floor !== undefined && compareTuples(floor, unsetAt) <= 0 && onceAfter(after!, unsetAt);
      if (!known) gaps.push([key, unsetAt]);
    }
    return gaps;
  }

  /** The earliest `$set_once` of `key` after `floor` (none: undefined), as read from its `once` facts. */
  knowOnces(key: string, floor: When, earliest: FirstOnce | undefined): void {
    const state = this.#properties.get(key);
    if (state === undefined) return;
    state.floor = floor;
    state.after = earliest ?? NO_FIRST_ONCE;
  }

  /**
   * Whether folding `fact` in could change anything any derivation reads, now or after any further facts: false
   * when every aggregate it carries is already reached (a later time for an earliest, an earlier one for a
   * latest). Facts only accumulate and components only grow, so a fact this holds dominated stays dominated.
   * `once` facts are never dominated: which one follows an `$unset` depends on where a later `$unset` lands.
   */
  changedBy(fact: FactRow): boolean {
    switch (fact.kind) {
      case "property": {
        const state = this.#properties.get(fact.name);
        return (
          state === undefined ||
          compareTuples(fact.last_write, state.write) > 0 ||
          compareTuples(fact.first_once, state.firstOnce) < 0 ||
          compareTuples(fact.last_once, state.lastOnce) > 0
        );
      }
      case "location": {
        const state = this.#location;
        return (
          state === undefined ||
          compareTuples(fact.last_write, state.write) > 0 ||
          compareTuples(fact.first_once, state.firstOnce) < 0
        );
      }
      case "identified": {
        const first = this.#identified;
        return first === undefined || before(fact.at, fact.distinct_id, first.at, first.distinctId);
      }
      case "born": {
        const birth = this.births.get(fact.name);
        return birth === undefined || before(fact.at, fact.distinct_id, birth.at, birth.distinctId);
      }
      case "joined":
        return !this.members.has(fact.distinct_id) || !this.members.has(fact.name);
      case "once":
        return true;
    }
  }

  /** Whether the latest write of `key` is a `$set` of `value` (JSON text): a repeat of it changes no value. */
  holdsValue(key: string, value: string): boolean {
    const write = this.#properties.get(key)?.write;
    return write !== undefined && write[0] === 1 && write[3] === 0 && write[4] === value;
  }

  /**
   * Whether `key` has a `$set_once` earlier than `at` and no `$unset` as its latest write: a later `$set_once`
   * then changes no value (after an `$unset`, the first `$set_once` that follows it decides, so those count).
   */
  holdsOnceBefore(key: string, at: When): boolean {
    const state = this.#properties.get(key);
    if (state === undefined || (state.write[0] === 1 && state.write[3] === 1)) return false;
    const [absent, onceAt, arrival] = state.firstOnce;
    // timestamps are ASCII: `<` orders them as ClickHouse does
    return absent === 0 && (onceAt === at[0] ? arrival < at[1] : onceAt < at[0]);
  }

  /**
   * Whether a `location` fact repeats what is held: its `$set` (if any) the latest location and each key's value, its
   * `$set_once` (if any) later than the earliest.
   */
  holdsLocation(fact: FactRow): boolean {
    const state = this.#location;
    if (state === undefined) return false;
    const [written, , , , set] = fact.last_write;
    const repeats = written === 0 || (state.write[0] === 1 && state.write[4] === set && this.#locationDecides(set));
    return repeats && compareTuples(fact.first_once, state.firstOnce) >= 0;
  }

  /** Whether the latest location decides each of its keys: no `$set` or `$unset` of the key's own is later. */
  #locationDecides(set: string): boolean {
    const latest = this.#location!.write;
    return Object.keys(objectIn(set)).every((key) => {
      const own = this.#properties.get(key)?.write;
      return own === undefined || compareTuples(own, latest) < 0;
    });
  }

  /** A copy that takes further facts without changing this one. */
  clone(): Component {
    const copy = new Component();
    copy.absorb(this);
    return copy;
  }

  /** Adds the facts of another component: the IDs of both are now one person's. */
  absorb(other: Component): void {
    for (const id of other.members) this.members.add(id);
    for (const [personId, birth] of other.births)
      this.births.set(personId, earlierBirth(this.births.get(personId), birth));
    const identified = other.#identified;
    const first = this.#identified;
    if (
      identified !== undefined &&
      (first === undefined || before(identified.at, identified.distinctId, first.at, first.distinctId))
    ) {
      this.#identified = identified;
    }
    for (const [key, state] of other.#properties) this.#foldProperty(key, state);
    if (other.#location !== undefined) this.#foldLocation(other.#location);
    this.#identityWrites += other.#identityWrites;
    this.#linkWrites += other.#linkWrites;
    this.#propertyWrites += other.#propertyWrites;
  }

  /** About how much memory it takes, for a cache's budget: its strings at two bytes a character, and overheads. */
  get bytes(): number {
    let bytes = 200;
    for (const { creator } of this.births.values()) bytes += 150 + 2 * creator[3].length;
    for (const id of this.members) bytes += 2 * id.length + 60;
    for (const [key, { write, firstOnce, lastOnce }] of this.#properties) {
      bytes += 2 * (key.length + write[4].length + firstOnce[3].length + lastOnce[3].length) + 300;
    }
    if (this.#location !== undefined)
      bytes += 2 * (this.#location.write[4].length + this.#location.firstOnce[3].length);
    return bytes;
  }

  /** The person that survives: the earliest birth's (when, then person id). */
  get personId(): string | undefined {
    return this.#earliestBirth()?.[0];
  }

  #earliestBirth(): [string, Birth] | undefined {
    let earliest: [string, Birth] | undefined;
    for (const entry of this.births) {
      if (earliest === undefined || before(entry[1].at, entry[0], earliest[1].at, earliest[0])) earliest = entry;
    }
    return earliest;
  }

  /** Version of each of its links: the rows of its `born` and `joined` facts, above `LINK_VERSION_BASE`. */
  get linkVersion(): number {
    return LINK_VERSION_BASE + this.#linkWrites;
  }

  /** The person its facts make; undefined without a birth (only facts written by something else lack one). */
  person(): Person | undefined {
    const earliest = this.#earliestBirth();
    if (earliest === undefined) return undefined;
    const [id, birth] = earliest;
    return {
      id,
      distinctId: this.#identified?.distinctId ?? birth.distinctId,
      properties: this.propertiesJson(),
      isIdentified: this.#identified !== undefined,
      isDeleted: false,
      createdAt: birth.at[0],
      version: VERSION_BASE + this.#identityWrites + this.#propertyWrites,
    };
  }

  /**
   * The other persons births created here, each now merged into `survivor` (this component's `person()`): written
   * deleted, at the survivor's version, with no properties.
   */
  mergedAway(survivor: Person): Person[] {
    return [...this.births]
      .filter(([id]) => id !== survivor.id)
      .map(([id, birth]) => ({
        id,
        distinctId: birth.distinctId,
        properties: "{}",
        isIdentified: false,
        isDeleted: true,
        createdAt: birth.at[0],
        version: survivor.version,
      }));
  }

  /** Its properties as JSON text, keys in code unit order, each value as its fact holds it. */
  propertiesJson(): string {
    return propertiesJsonOf(this.#properties, this.#location, this.#earliestBirth()?.[1].creator);
  }
}
