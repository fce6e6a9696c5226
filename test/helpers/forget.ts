import { personIdFor } from "../../src/identity/person";
import { literalList } from "../../src/storage/sql";

// One story for the tests of `ingest forget`, however they run it: an anonymous visitor and the user it identifies
// as, each a person first, then merged; events under both, in two months; a session of theirs shared with another
// person's event; a group; other persons (one merged too) that must come through untouched.

/** The two IDs of the person forgotten (forgetting either forgets both), and what only they ever sent. */
export const OURS = ["f-user", "f-anon"] as const;
export const SECRETS = ["secret@example.com", "Secret Name", "anon-secret"] as const;
/** Their person ids: each ID's own (one merged into the other) and the one the anonymous ID's personless events had. */
export const OUR_PERSONS = OURS.map(personIdFor);
export const OUR_SESSIONS = ["s-anon", "s-user"] as const;
const OTHERS = ["f-other", "f-other2", "f-other2-anon"] as const;

const at = (day: string) => `${day}T12:00:00Z`;

/** The story, batch by batch, in the order it is sent. */
export const STORY: object[][] = [
  // a personless page view first (posthog-js's anonymous default), then one that makes the anonymous person
  [
    {
      event: "$pageview",
      distinct_id: "f-anon",
      timestamp: at("2025-05-09"),
      properties: { $process_person_profile: false, $session_id: "s-anon", $current_url: "https://shop.example/a" },
    },
  ],
  [
    {
      event: "$pageview",
      distinct_id: "f-anon",
      timestamp: at("2025-05-10"),
      properties: { $session_id: "s-anon", $set_once: { first_seen: "anon-secret" } },
    },
  ],
  // the user is a person of its own, then identifies: the two merge, the anonymous one (born first) survives
  [
    {
      event: "$pageview",
      distinct_id: "f-user",
      timestamp: at("2025-06-01"),
      properties: { $session_id: "s-user", $set: { email: "secret@example.com", plan: "pro" } },
    },
  ],
  [
    {
      event: "$identify",
      distinct_id: "f-user",
      timestamp: at("2025-06-02"),
      properties: { $anon_distinct_id: "f-anon", $session_id: "s-user", $set: { name: "Secret Name" } },
    },
  ],
  // a session they share with another person's event, a group, and the others' own lives
  [
    { event: "click", distinct_id: "f-user", timestamp: at("2025-06-03"), properties: { $session_id: "s-shared" } },
    { event: "click", distinct_id: "f-other", timestamp: at("2025-06-03"), properties: { $session_id: "s-shared" } },
    {
      event: "$groupidentify",
      distinct_id: "f-user",
      timestamp: at("2025-06-03"),
      properties: { $group_type: "company", $group_key: "acme", $group_set: { name: "Acme" } },
    },
  ],
  [
    {
      event: "$pageview",
      distinct_id: "f-other",
      timestamp: at("2025-06-04"),
      properties: { $session_id: "s-other", $set: { email: "other@example.com" } },
    },
    { event: "$pageview", distinct_id: "f-other2-anon", timestamp: at("2025-05-04"), properties: { $set: { a: 1 } } },
    { event: "$pageview", distinct_id: "f-other2", timestamp: at("2025-06-04"), properties: { $set: { b: 2 } } },
  ],
  [
    {
      event: "$identify",
      distinct_id: "f-other2",
      timestamp: at("2025-06-05"),
      properties: { $anon_distinct_id: "f-other2-anon" },
    },
  ],
];

/** How many events the story stores of theirs. */
export const OUR_EVENTS = 6;

const ids = literalList([...OURS]);
const persons = literalList(OUR_PERSONS);
const secrets = `[${literalList([...SECRETS]).slice(1, -1)}]`;

/** Each table TRACES reads, and which of its rows are theirs (by ID, person id, session, or a value only they sent). */
const TRACED: readonly (readonly [table: string, theirs: string])[] = [
  [
    "events",
    `distinct_id IN ${ids} OR person_id IN ${persons} OR session_id IN ('s-anon', 's-user')
    OR multiSearchAny(properties, ${secrets}) OR multiSearchAny(person_properties, ${secrets})`,
  ],
  ["persons", `id IN ${persons} OR distinct_id IN ${ids} OR multiSearchAny(properties, ${secrets})`],
  ["person_distinct_ids", `distinct_id IN ${ids} OR person_id IN ${persons}`],
  [
    "identity_facts",
    `distinct_id IN ${ids} OR name IN ${ids} OR name IN ${persons}
    OR multiSearchAny(concat(toString(last_write), toString(first_once), toString(last_once)), ${secrets})`,
  ],
  ["person_overrides", `old_person_id IN ${persons} OR override_person_id IN ${persons}`],
  ["sessions", "session_id IN ('s-anon', 's-user')"],
  ["groups", "0"],
  ["group_facts", "0"],
];

/**
 * For each table: how many of its rows are theirs and how many it has, read with FINAL (one row a key, as the
 * table's engine collapses them), so a background merge between two reads changes neither; and how many rows of
 * theirs are stored (`stored`, no FINAL: every version and partial row not merged yet), which a merge may lower.
 * `{db}` is the database, as `queryRows` fills it in (`sql` below for the others).
 */
export const TRACES = TRACED.map(
  ([table, theirs]) =>
    `SELECT '${table}' AS tbl, countIf(${theirs}) AS theirs, count() AS total,
    (SELECT countIf(${theirs}) FROM {db}.${table}) AS stored FROM {db}.${table} FINAL`,
).join("\nUNION ALL ");

export interface Trace {
  readonly tbl: string;
  readonly theirs: number | string;
  readonly total: number | string;
  readonly stored: number | string;
}

/** Traces by table, as merged: `[theirs, total]`, both with FINAL. */
export function byTable(rows: readonly Trace[]): Record<string, [number, number]> {
  return Object.fromEntries(rows.map((row) => [row.tbl, [Number(row.theirs), Number(row.total)]]));
}

/** Rows of theirs by table, as stored (no FINAL): what a forget that starts now counts as removed, at most. */
export function storedByTable(rows: readonly Trace[]): Record<string, number> {
  return Object.fromEntries(rows.map((row) => [row.tbl, Number(row.stored)]));
}

/**
 * `removed` if a forget's count of a table's rows is one a forget that started after `before` could have made:
 * at least one row a key of theirs (`before`'s FINAL count) and at most the rows stored then (merges since then
 * only collapse rows, and nothing was written between), else a sentence with the bounds.
 */
export function withinTrace(removed: number, theirs: number, stored: number): number | string {
  return theirs <= removed && removed <= stored ? removed : `${removed}, not within [${theirs}, ${stored}]`;
}

/**
 * What the others have, to compare before and after: every person's current properties but theirs, and each
 * session's events and first ID as read (s-shared's events included: it must keep the other person's).
 */
export const OTHERS_STATE = `SELECT * FROM (
  SELECT 'person' AS kind, distinct_id AS key, properties AS value FROM {db}.persons FINAL
  WHERE id NOT IN ${persons} AND NOT is_deleted
  UNION ALL SELECT 'session', session_id, concat(toString(uniqMerge(event_count)), ' ', argMinMerge(distinct_id))
  FROM {db}.sessions WHERE session_id NOT IN ('s-anon', 's-user') GROUP BY session_id
  UNION ALL SELECT 'link', distinct_id, toString(argMax(person_id, version)) FROM {db}.person_distinct_ids
  WHERE distinct_id IN ${literalList([...OTHERS])} GROUP BY distinct_id
  UNION ALL SELECT 'group', group_key, properties FROM {db}.groups FINAL)
  ORDER BY kind, key`;

/** `template` with `{db}` as the quoted database. */
export function sql(template: string, database: string): string {
  return template.replaceAll("{db}", `\`${database}\``);
}
