import type { Timestamp } from "../contract";
import type { Link, Person } from "./person";

/** The rows of `persons` and `person_distinct_ids`, made from the identity model; columns in the order inserted. */

/** One version of a person; the highest `version` is the current one. */
export interface PersonRow {
  id: string;
  /** The person's primary distinct ID: the identified one once there is one, else the first seen. */
  distinct_id: string;
  properties: string;
  is_identified: 0 | 1;
  is_deleted: 0 | 1;
  created_at: Timestamp;
  version: number;
}

export function personRow(person: Person): PersonRow {
  return {
    id: person.id,
    distinct_id: person.distinctId,
    properties: person.properties,
    is_identified: person.isIdentified ? 1 : 0,
    is_deleted: person.isDeleted ? 1 : 0,
    created_at: person.createdAt,
    version: person.version,
  };
}

/** One version of a distinct ID's link to its person; the highest `version` is the current one. */
export interface DistinctIdRow {
  distinct_id: string;
  person_id: string;
  is_deleted: 0 | 1;
  version: number;
}

export function linkRow(distinctId: string, link: Link): DistinctIdRow {
  return { distinct_id: distinctId, person_id: link.personId, is_deleted: 0, version: link.version };
}

/** One version of where a merged-away person's events belong now; the highest `version` is the current one. */
export interface OverrideRow {
  old_person_id: string;
  override_person_id: string;
  version: number;
}

/** `mergedAway`'s events belong to `survivor`, as of the survivor's version. */
export function overrideRow(mergedAway: Person, survivor: Person): OverrideRow {
  return { old_person_id: mergedAway.id, override_person_id: survivor.id, version: survivor.version };
}
