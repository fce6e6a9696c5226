import type { Timestamp } from "../contract";

/**
 * What events said about distinct IDs (docs/scale-out.md#facts), one row of `identity_facts` each. Facts are only
 * ever added; every person and link this service writes is computed from them (`component.ts`), so any instance
 * that reads the same facts writes the same rows, whatever order the events came in.
 *
 * - `born`: the ID's event created the person `name` (no link for the ID existed). With `PERSON_CREATOR_EVENT`,
 *   `first_once` holds that event's uuid (as JSON text, at the birth's time): the person's `$creator_event_uuid`.
 * - `joined`: an `$identify`, `$create_alias` or `$merge_dangerously` put the ID and the ID `name` on one person;
 *   written both ways.
 * - `identified`: an `$identify` was sent with this ID as its distinct ID.
 * - `property`: updates of the key `name`: its latest `$set` or `$unset`, its earliest and latest `$set_once`.
 * - `once`: one `$set_once` of a key (`first_once`), named by the key and when (`onceName`), so these rows do not
 *   collapse: after an `$unset` the first `$set_once` that follows it wins, and which that is depends on when the
 *   `$unset` was, which a later event can move. Read only for a key whose latest write is an `$unset` that some
 *   `$set_once` followed (`gather.ts`, `fillOnceGaps`).
 * - `location`: where the ID's events came from, one row for all their `$geoip_*` keys (`name` empty):
 *   `last_write` holds the `$set` of the latest as a JSON object, `first_once` the `$set_once` of the earliest
 *   (`$initial_geoip_*`). One row a located event instead of three a key; `Component` reads each key out of it.
 *
 * Rows with the same `(distinct_id, kind, name)` collapse (AggregatingMergeTree): `at` and `first_once` to the
 * earliest, `last_write` and `last_once` to the latest, `writes` to the sum. The tuples order as ClickHouse
 * compares them, so a read of the collapsed row and a fold of the rows here give the same answer.
 */
export type FactKind = "born" | "joined" | "identified" | "property" | "once" | "location";

/**
 * When: the event's timestamp, then its arrival stamp (`arrival-clock.ts`), which orders events with equal
 * timestamps as they were applied.
 */
export type When = readonly [Timestamp, number];
/**
 * `[present, when, 0 set | 1 unset, value as JSON text]`: the latest wins. The value settles a tie between
 * instances, so the latest is one and the same whichever rows an instance reads.
 */
export type LastWrite = readonly [0 | 1, Timestamp, number, 0 | 1, string];
/** `[absent, when, value as JSON text]`: the earliest wins. */
export type FirstOnce = readonly [0 | 1, Timestamp, number, string];
/** `[present, when, value as JSON text]`: the latest wins. */
export type LastOnce = readonly [0 | 1, Timestamp, number, string];

export interface FactRow {
  distinct_id: string;
  kind: FactKind;
  name: string;
  /** When the event happened: for `born`, when the person was created. */
  at: When;
  last_write: LastWrite;
  first_once: FirstOnce;
  last_once: LastOnce;
  /** How many rows were written: a person's version counts its facts' rows (docs/scale-out.md#derivation). */
  writes: number;
}

/** A row as inserted: stamped with when it was written (facts: what the repair sweep reads them by, repair.ts). */
export type Written<Row> = Row & { readonly written_at: string };
export type WrittenFact = Written<FactRow>;

/** The rows (facts, overrides), stamped with the time they are written (milliseconds, UTC, as `written_at` holds it). */
export function stamped<Row extends object>(rows: readonly Row[], now: Date = new Date()): Written<Row>[] {
  const writtenAt = now.toISOString().slice(0, 23).replace("T", " ");
  return rows.map((row) => ({ ...row, written_at: writtenAt }));
}

export const EPOCH = "1970-01-01 00:00:00.000000" as Timestamp;
export const NO_WRITE: LastWrite = [0, EPOCH, 0, 0, ""];
/** An earliest `$set_once` that is none: it sorts after every real one. */
export const NO_FIRST_ONCE: FirstOnce = [1, EPOCH, 0, ""];
export const NO_LAST_ONCE: LastOnce = [0, EPOCH, 0, ""];

/** A fact other than a property update, written once. */
export function identityFact(
  kind: Exclude<FactKind, "property" | "once" | "location">,
  distinctId: string,
  name: string,
  at: When,
): FactRow {
  return {
    distinct_id: distinctId,
    kind,
    name,
    at,
    last_write: NO_WRITE,
    first_once: NO_FIRST_ONCE,
    last_once: NO_LAST_ONCE,
    writes: 1,
  };
}

/** A person born to `distinctId` by an event, which names itself its creator when `creator` (its uuid) is given. */
export function bornFact(distinctId: string, personId: string, at: When, creator: string | undefined): FactRow {
  const fact = identityFact("born", distinctId, personId, at);
  return creator === undefined ? fact : { ...fact, first_once: [0, at[0], at[1], JSON.stringify(creator)] };
}

/** A property fact: the key's `$set` or `$unset` (`write`), and its `$set_once` (`once`), by one event. */
export function propertyFact(
  distinctId: string,
  key: string,
  at: When,
  write: readonly [0 | 1, string] | undefined,
  once: string | undefined,
): FactRow {
  return {
    distinct_id: distinctId,
    kind: "property",
    name: key,
    at,
    last_write: write === undefined ? NO_WRITE : [1, at[0], at[1], write[0], write[1]],
    first_once: once === undefined ? NO_FIRST_ONCE : [0, at[0], at[1], once],
    last_once: once === undefined ? NO_LAST_ONCE : [1, at[0], at[1], once],
    writes: 1,
  };
}

/** The name of a `once` fact: JSON text of the key and when, which starts with `oncePrefix(key)`. */
export function onceName(key: string, at: When): string {
  return JSON.stringify([key, at[0], at[1]]);
}

/** What the names of a key's `once` facts start with: its JSON text cannot be the start of another key's. */
export function oncePrefix(key: string): string {
  return `${JSON.stringify([key]).slice(0, -1)},`;
}

/** The key a `once` fact's name holds. */
export function onceKey(name: string): string {
  return (JSON.parse(name) as [string])[0];
}

/** One `$set_once` of a key by one event, kept apart from every other (`once` above). */
export function onceFact(distinctId: string, key: string, at: When, value: string): FactRow {
  return {
    distinct_id: distinctId,
    kind: "once",
    name: onceName(key, at),
    at,
    last_write: NO_WRITE,
    first_once: [0, at[0], at[1], value],
    last_once: NO_LAST_ONCE,
    writes: 1,
  };
}

/**
 * Where an event placed its ID (`location`): `set` and `setOnce` as JSON objects, either empty for none (keys the
 * event's own `$set`, `$unset` or `$set_once` names are left out of it: the event's own word wins).
 */
export function locationFact(distinctId: string, at: When, set: string, setOnce: string): FactRow {
  return {
    distinct_id: distinctId,
    kind: "location",
    name: "",
    at,
    last_write: set === "" ? NO_WRITE : [1, at[0], at[1], 0, set],
    first_once: setOnce === "" ? NO_FIRST_ONCE : [0, at[0], at[1], setOnce],
    last_once: NO_LAST_ONCE,
    writes: 1,
  };
}

/**
 * Orders tuples as ClickHouse does: numbers by value, strings by their UTF-8 bytes (which is code point order;
 * JavaScript's `<` compares UTF-16 code units, which differs only between a surrogate and U+E000–U+FFFF).
 */
export function compareTuples(a: readonly (number | string)[], b: readonly (number | string)[]): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue;
    if (typeof x === "number") return x < (y as number) ? -1 : 1;
    return compareCodePoints(x, y as string);
  }
  return 0;
}

function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** Moves surrogates (U+D800–U+DFFF) above U+E000–U+FFFF, so code units order as the code points they encode. */
function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}
