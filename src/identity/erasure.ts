import type { ClickHouse } from "../storage";
import { gatherFacts } from "./gather";
import { type Link, personIdFor } from "./person";
import { loadNeighbourhood } from "./person-store";

/** What identity holds of the persons of some distinct IDs: all their IDs, and every person id they have had. */
export interface PersonsOf {
  /** Every distinct ID of theirs: those asked, those joined to them by facts, and those ever linked to their persons. */
  readonly ids: ReadonlySet<string>;
  /**
   * Every person id their IDs have had: those their links point at (in any version), those their `born` facts
   * name, those merged into one of them (`person_overrides`), and the one each ID would be born to (`personIdFor`,
   * which personless events carry before any person exists).
   */
  readonly personIds: ReadonlySet<string>;
  /** Those asked that have no link and no fact: no person has them. */
  readonly unknown: readonly string[];
}

/** Most rounds of reading before `personsOf` gives up: each finds IDs the previous could not reach; one is usual. */
const MAX_ROUNDS = 100;

/**
 * Everything that belongs to the persons of `asked`, for erasing it (docs/operations.md#forgetting-persons). A
 * person's IDs are the component of its facts and links (`gatherFacts`, as a flush reads it); the persons their
 * links ever named, those merged into them, and the IDs ever linked to any of those are added until nothing new
 * turns up, so that no row a failed write or an old version left beside the current ones is missed.
 */
export async function personsOf(db: ClickHouse, asked: readonly string[]): Promise<PersonsOf> {
  const ids = new Set<string>();
  const personIds = new Set<string>();
  const known = new Set<string>();
  let frontier = new Set(asked);
  for (let round = 0; frontier.size > 0; round++) {
    if (round === MAX_ROUNDS) throw new Error(`the persons' IDs kept growing after ${MAX_ROUNDS} reads`);
    const current = new Map<string, Link>();
    const { facts, visited } = await gatherFacts((ids) => loadNeighbourhood(db, ids), frontier, current, []);
    for (const id of visited) ids.add(id);
    for (const fact of facts) {
      ids.add(fact.distinct_id);
      known.add(fact.distinct_id);
      if (fact.kind === "joined") ids.add(fact.name);
      if (fact.kind === "born") personIds.add(fact.name);
    }
    for (const [id, link] of current) {
      known.add(id);
      personIds.add(link.personId);
    }
    for (const id of ids) personIds.add(personIdFor(id));
    for (const id of await linkedPersons(db, [...ids])) personIds.add(id);
    await addMerged(db, personIds);
    const linked = await linkedIds(db, [...personIds]);
    frontier = new Set(linked.filter((id) => !ids.has(id)));
  }
  return { ids, personIds, unknown: asked.filter((id) => !known.has(id)) };
}

/** The persons any of `ids` was ever linked to: every version of their links, deleted ones too. */
async function linkedPersons(db: ClickHouse, ids: readonly string[]): Promise<string[]> {
  const rows = await db.rowsIn<{ person: string }>(
    ids,
    (list) =>
      `SELECT DISTINCT toString(person_id) AS person FROM ${db.table("person_distinct_ids")} WHERE distinct_id IN ${list}`,
  );
  return rows.map((row) => row.person);
}

/** The IDs ever linked to any of `personIds`, in any version. */
async function linkedIds(db: ClickHouse, personIds: readonly string[]): Promise<string[]> {
  const rows = await db.rowsIn<{ distinct_id: string }>(
    personIds,
    (list) => `SELECT DISTINCT distinct_id FROM ${db.table("person_distinct_ids")} WHERE person_id IN ${list}`,
  );
  return rows.map((row) => row.distinct_id);
}

/** Adds to `personIds` every person an override joins to one of them, either way, until none is new. */
async function addMerged(db: ClickHouse, personIds: Set<string>): Promise<void> {
  for (let size = -1; size !== personIds.size; ) {
    size = personIds.size;
    const rows = await db.rowsIn<{ merged: string; survivor: string }>(
      [...personIds],
      (list) => `SELECT DISTINCT toString(old_person_id) AS merged, toString(override_person_id) AS survivor
        FROM ${db.table("person_overrides")} WHERE old_person_id IN ${list} OR override_person_id IN ${list}`,
    );
    for (const { merged, survivor } of rows) personIds.add(merged).add(survivor);
  }
}
