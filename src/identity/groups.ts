import type { CapturedEvent, Properties, Timestamp } from "../contract";
import { identifierFrom, isObject } from "../contract";
import type { ClickHouse } from "../storage";
import { EPOCH } from "./facts";

/**
 * Groups (PostHog's group analytics): a `$groupidentify` event names a group (`$group_type`, `$group_key`) and sets
 * its properties (`$group_set`, merged as `$set` is). What each event said is a row of `group_facts`, collapsed per
 * key to the latest value by event timestamp; `groups` holds each group derived from all of its facts, at a
 * version that counts them, so every instance that derives a group from the same facts writes the same row.
 */

/** Most characters of a group's type and key, as PostHog keeps them. */
const MAX_GROUP_TYPE = 400;
const MAX_GROUP_KEY = 400;

/** One row of `group_facts`. */
export interface GroupFactRow {
  group_type: string;
  group_key: string;
  /** A property's key, or `""`: the group exists. */
  key: string;
  first_at: Timestamp;
  /** `[when, value as JSON text]`: the latest wins, the value settling a tie. */
  last_write: readonly [Timestamp, string];
  writes: number;
}

/** One version of a group. */
export interface GroupRow {
  group_type: string;
  group_key: string;
  /** JSON text, keys in code unit order. */
  properties: string;
  created_at: Timestamp;
  version: number;
}

/**
 * The group a `$groupidentify` event names and what it sets, or undefined (no group, or not that event). One sent
 * with `$process_person_profile: false` names none: PostHog drops it. (A `$groupidentify` is `personless` exactly
 * when `PERSONLESS_EVENTS` is on, and with it off the flag is an ordinary property.)
 */
export function groupIdentified(
  event: CapturedEvent,
): { readonly type: string; readonly key: string; readonly set: Properties } | undefined {
  if (event.event !== "$groupidentify") return undefined;
  if (event.personless && event.properties.$process_person_profile === false) return undefined;
  const type = identifierFrom(event.properties.$group_type, MAX_GROUP_TYPE);
  const key = identifierFrom(event.properties.$group_key, MAX_GROUP_KEY);
  if (type === undefined || key === undefined) return undefined;
  const set = event.properties.$group_set;
  return { type, key, set: isObject(set) ? set : {} };
}

/** The facts of a flush's `$groupidentify` events. */
export function groupFactsOf(events: readonly CapturedEvent[]): GroupFactRow[] {
  const facts: GroupFactRow[] = [];
  for (const event of events) {
    const group = groupIdentified(event);
    if (group === undefined) continue;
    const fact = (key: string, last_write: readonly [Timestamp, string]): GroupFactRow => ({
      group_type: group.type,
      group_key: group.key,
      key,
      first_at: event.timestamp,
      last_write,
      writes: 1,
    });
    facts.push(fact("", [EPOCH, ""]));
    for (const [key, value] of Object.entries(group.set)) {
      facts.push(fact(key.toWellFormed(), [event.timestamp, JSON.stringify(value)]));
    }
  }
  return facts;
}

interface GroupFactRecord {
  group_type: string;
  group_key: string;
  key: string;
  first: Timestamp;
  latest: [Timestamp, string];
  rows_written: number | string;
}

/**
 * The groups these facts name, each derived from all of its facts (read once the node has caught up with the
 * other writers'). Read by key, the types matched here: a flush names few groups, a hostile one many.
 */
export async function deriveGroups(db: ClickHouse, facts: readonly GroupFactRow[]): Promise<GroupRow[]> {
  if (facts.length === 0) return [];
  const named = new Set(facts.map((fact) => JSON.stringify([fact.group_type, fact.group_key])));
  await db.catchUp(["group_facts"]);
  const records = await db.rowsIn<GroupFactRecord>(
    [...new Set(facts.map((fact) => fact.group_key))],
    (keys) =>
      `SELECT group_type, group_key, key, min(first_at) AS first, max(last_write) AS latest,
         sum(writes) AS rows_written
       FROM ${db.table("group_facts")} WHERE group_key IN ${keys} GROUP BY group_type, group_key, key
       ORDER BY group_type, group_key, key`,
  );
  const groups = new Map<string, GroupRow & { entries: string[] }>();
  for (const record of records) {
    const id = JSON.stringify([record.group_type, record.group_key]);
    if (!named.has(id)) continue;
    let group = groups.get(id);
    if (group === undefined) {
      const { group_type, group_key, first } = record;
      group = { group_type, group_key, properties: "", created_at: first, version: 0, entries: [] };
      groups.set(id, group);
    }
    if (record.first < group.created_at) group.created_at = record.first;
    group.version += Number(record.rows_written);
    if (record.key !== "") group.entries.push(`${JSON.stringify(record.key)}:${record.latest[1]}`);
  }
  return [...groups.values()].map(({ group_type, group_key, created_at, version, entries }) => ({
    group_type,
    group_key,
    properties: `{${entries.join(",")}}`,
    created_at,
    version,
  }));
}
