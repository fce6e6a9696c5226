import {
  compareTuples,
  type FirstOnce,
  type LastOnce,
  type LastWrite,
  NO_FIRST_ONCE,
  NO_LAST_ONCE,
  NO_WRITE,
  type When,
} from "./facts";

/**
 * A person's properties, from its facts (the rules are `Component`'s, docs/identity.md#person-properties): each
 * key's `property` facts folded into a `KeyState`, the `location` facts into a `LocationState`, and the JSON those
 * give. Functions of the states alone; `Component` holds the states, and which facts they fold.
 */

/** One key's `property` facts folded: its latest write, its earliest and latest `$set_once`. */
export interface KeyState {
  write: LastWrite;
  firstOnce: FirstOnce;
  lastOnce: LastOnce;
  /**
   * The earliest `$set_once` after `floor` (`NO_FIRST_ONCE` if none is known), exact while `floor` is defined: what
   * decides the key after an `$unset` at or after `floor`. Undefined until `knowOnces` tells it; only the `once`
   * facts read for that (and a flush's own, after) are folded in.
   */
  floor?: When | undefined;
  after?: FirstOnce | undefined;
}

/** The `location` facts folded: the latest `$set` of `$geoip_*` keys and the earliest `$set_once`, as objects. */
export type LocationState = Pick<KeyState, "write" | "firstOnce">;

/** Of two states of one key (or of the location), the latest write and the earliest `$set_once`. */
export function latestWriteEarliestOnce(a: LocationState, b: LocationState): LocationState {
  return {
    write: compareTuples(b.write, a.write) > 0 ? b.write : a.write,
    firstOnce: compareTuples(b.firstOnce, a.firstOnce) < 0 ? b.firstOnce : a.firstOnce,
  };
}

/** Whether a `$set_once` (`once`) came after `when`. */
export function onceAfter(once: FirstOnce | LastOnce, when: When): boolean {
  return compareTuples([once[1], once[2]], when) > 0;
}

/**
 * Folds `update`, another state of the same key, into `state`: the latest write, the earliest and the latest
 * `$set_once`, and what is known of the earliest `$set_once` after a floor.
 */
export function foldKey(state: KeyState, update: KeyState): void {
  const onces = foldOnces(state, update);
  Object.assign(state, latestWriteEarliestOnce(state, update));
  if (compareTuples(update.lastOnce, state.lastOnce) > 0) state.lastOnce = update.lastOnce;
  state.floor = onces.floor;
  state.after = onces.after;
}

/**
 * What is known of the earliest `$set_once` after a floor once two states are one: a side with no `$set_once`
 * at all changes nothing; otherwise it is known after the later floor if neither side's is at or before it.
 */
function foldOnces(a: KeyState, b: KeyState): Pick<KeyState, "floor" | "after"> {
  const none = (side: KeyState) => side.floor === undefined && side.lastOnce[0] === 0;
  if (none(b)) return a;
  if (none(a)) return b;
  if (a.floor === undefined || b.floor === undefined) return {};
  const floor = compareTuples(b.floor, a.floor) > 0 ? b.floor : a.floor;
  const [x, y] = [a.after!, b.after!];
  if (![x, y].every((once) => once[0] === 1 || onceAfter(once, floor))) return {};
  return { floor, after: compareTuples(y, x) < 0 ? y : x };
}

/**
 * The object a location fact holds. The service writes only objects; a row that holds anything else (only a
 * writable query port could insert one) says nothing, rather than failing every flush of its IDs for good.
 */
export function objectIn(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** The key of the uuid of the event that created the person (PostHog's name). */
export const CREATOR_KEY = "$creator_event_uuid";

/**
 * Each key the location sets or sets once, and the creator's key if the person's birth recorded its event, as a
 * key's own facts would say it.
 */
function derivedKeys(location: LocationState | undefined, creator: FirstOnce | undefined): Map<string, KeyState> {
  const keys = new Map<string, KeyState>();
  if (creator !== undefined && creator[0] === 0) {
    keys.set(CREATOR_KEY, { write: NO_WRITE, firstOnce: creator, lastOnce: NO_LAST_ONCE });
  }
  const { write, firstOnce } = location ?? {};
  if (write !== undefined && write[0] === 1) {
    for (const [key, value] of Object.entries(objectIn(write[4]))) {
      keys.set(key, {
        write: [1, write[1], write[2], 0, JSON.stringify(value)],
        firstOnce: NO_FIRST_ONCE,
        lastOnce: NO_LAST_ONCE,
      });
    }
  }
  if (firstOnce !== undefined && firstOnce[0] === 0) {
    for (const [key, value] of Object.entries(objectIn(firstOnce[3]))) {
      const once: FirstOnce = [0, firstOnce[1], firstOnce[2], JSON.stringify(value)];
      const state = keys.get(key);
      if (state === undefined) keys.set(key, { write: NO_WRITE, firstOnce: once, lastOnce: NO_LAST_ONCE });
      else state.firstOnce = once;
    }
  }
  return keys;
}

/**
 * The properties as JSON text, keys in code unit order, each value as its fact holds it. The location's keys and
 * the creator (`creator`, the birth's) compete with a key's own facts by when; only its own decide after an `$unset`.
 */
export function propertiesJsonOf(
  properties: ReadonlyMap<string, KeyState>,
  location: LocationState | undefined,
  creator?: FirstOnce,
): string {
  const derived = derivedKeys(location, creator);
  const entries: string[] = [];
  for (const key of [...new Set([...properties.keys(), ...derived.keys()])].sort()) {
    const own = properties.get(key);
    const other = derived.get(key);
    const state =
      other === undefined ? own! : own === undefined ? other : { ...own, ...latestWriteEarliestOnce(own, other) };
    const value = keyValue(key, state);
    if (value !== undefined) entries.push(`${JSON.stringify(key)}:${value}`);
  }
  return `{${entries.join(",")}}`;
}
/**
 * A key's value as JSON text, or undefined if it has none (the rule in `Component`). After an `$unset` that a
 * `$set_once` followed, the earliest of those must be known (`onceGaps` is empty): a derivation without it would
 * write a value no other instance derives.
 */
function keyValue(key: string, { write, firstOnce, lastOnce, floor, after }: KeyState): string | undefined {
  const [written, writtenAt, writtenArrival, unset, value] = write;
  if (written === 0) return firstOnce[0] === 0 ? firstOnce[3] : undefined;
  if (unset === 0) return value;
  const unsetAt: When = [writtenAt, writtenArrival];
  if (lastOnce[0] === 0 || !onceAfter(lastOnce, unsetAt)) return undefined;
  if (floor === undefined || compareTuples(floor, unsetAt) > 0 || !onceAfter(after!, unsetAt)) {
    throw new Error(`The earliest $set_once of ${JSON.stringify(key)} after its $unset was not read`);
  }
  return after![3];
}
