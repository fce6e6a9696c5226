import { compareTuples, type FactRow, type FirstOnce, type LastOnce, type LastWrite, type When } from "./facts";
import type { Person } from "./person";

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
}

interface KeyState {
  write: LastWrite;
  firstOnce: FirstOnce;
  lastOnce: LastOnce;
}

/** Whether `a` happened before `b`: by when, then by `a`'s and `b`'s names (a person id, a distinct ID). */
function before(a: When, aName: string, b: When, bName: string): boolean {
  return compareTuples([a[0], a[1], aName], [b[0], b[1], bName]) < 0;
}

/**
 * The facts of one person: distinct IDs joined to each other directly or through others (a connected component
 * of the `joined` graph), folded. The person they make is a function of the facts alone, not of their order
 * (docs/identity.md#rules):
 *
 * - its id is the person the earliest birth created (when, then person id), its `created_at` that birth's;
 * - it is identified once any of its IDs was, and its primary distinct ID is the earliest identified one (when,
 *   then ID), or else the ID of that earliest birth;
 * - each property is its latest `$set` or `$unset` (when; within one event `$unset` wins); if it never had one,
 *   its earliest `$set_once`; if the latest is an `$unset`, the latest `$set_once` after it, if any;
 * - its version counts the rows of its facts; its links' version the rows of the facts links depend on, `born`
 *   and `joined` (not `identified`: a repeated `$identify` rewrites the person, not each of its links).
 *
 * Every fold here (the latest, the earliest, the sum) is the one ClickHouse applies when it collapses rows of
 * the same fact, so folding collapsed rows and folding the rows as written agree.
 */
export class Component {
  readonly members = new Set<string>();
  /** Each person a birth created, with the earliest birth that names it. */
  readonly births = new Map<string, Birth>();
  #identified: Birth | undefined;
  readonly #properties = new Map<string, KeyState>();
  #identityWrites = 0;
  /** Rows of `born` and `joined` facts: what links are derived from. */
  #linkWrites = 0;
  #propertyWrites = 0;

  add(fact: FactRow): void {
    this.members.add(fact.distinct_id);
    switch (fact.kind) {
      case "born": {
        const birth = this.births.get(fact.name);
        if (birth === undefined || before(fact.at, fact.distinct_id, birth.at, birth.distinctId)) {
          this.births.set(fact.name, { distinctId: fact.distinct_id, at: fact.at });
        }
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
    if (compareTuples(update.write, state.write) > 0) state.write = update.write;
    if (compareTuples(update.firstOnce, state.firstOnce) < 0) state.firstOnce = update.firstOnce;
    if (compareTuples(update.lastOnce, state.lastOnce) > 0) state.lastOnce = update.lastOnce;
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
    for (const [personId, birth] of other.births) {
      const mine = this.births.get(personId);
      if (mine === undefined || before(birth.at, birth.distinctId, mine.at, mine.distinctId)) {
        this.births.set(personId, birth);
      }
    }
    const identified = other.#identified;
    const first = this.#identified;
    if (
      identified !== undefined &&
      (first === undefined || before(identified.at, identified.distinctId, first.at, first.distinctId))
    ) {
      this.#identified = identified;
    }
    for (const [key, state] of other.#properties) this.#foldProperty(key, state);
    this.#identityWrites += other.#identityWrites;
    this.#linkWrites += other.#linkWrites;
    this.#propertyWrites += other.#propertyWrites;
  }

  /** About how much memory it takes, for a cache's budget: its strings at two bytes a character, and overheads. */
  get bytes(): number {
    let bytes = 200 + 150 * this.births.size;
    for (const id of this.members) bytes += 2 * id.length + 60;
    for (const [key, { write, firstOnce, lastOnce }] of this.#properties) {
      bytes += 2 * (key.length + write[4].length + firstOnce[3].length + lastOnce[3].length) + 300;
    }
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
    const entries: string[] = [];
    for (const key of [...this.#properties.keys()].sort()) {
      const value = keyValue(this.#properties.get(key)!);
      if (value !== undefined) entries.push(`${JSON.stringify(key)}:${value}`);
    }
    return `{${entries.join(",")}}`;
  }
}

/** A key's value as JSON text, or undefined if it has none (the rule in `Component`). */
function keyValue({ write, firstOnce, lastOnce }: KeyState): string | undefined {
  const [written, writtenAt, writtenArrival, unset, value] = write;
  if (written === 0) return firstOnce[0] === 0 ? firstOnce[3] : undefined;
  if (unset === 0) return value;
  const onceAfter = lastOnce[0] === 1 && compareTuples([lastOnce[1], lastOnce[2]], [writtenAt, writtenArrival]) > 0;
  return onceAfter ? lastOnce[3] : undefined;
}

/**
 * Splits facts into the components they describe: IDs joined by a `joined` fact, or by `together` (pairs known
 * to be on one person, such as IDs sharing a stored link), are one component.
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
