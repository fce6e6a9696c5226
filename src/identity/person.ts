import type { Timestamp } from "../contract";

/** person_id = UUIDv5(distinct_id) in this namespace (PostHog's person namespace), for a distinct ID seen first. */
const PERSON_ID_NAMESPACE = "932979b4-65c3-4424-8467-0b66ec27bc22";

export function personIdFor(distinctId: string): string {
  return Bun.randomUUIDv5(distinctId, PERSON_ID_NAMESPACE);
}

/** The latest version of a person. */
export interface Person {
  readonly id: string;
  /** The primary distinct ID: the identified one once there is one, else the first seen. */
  readonly distinctId: string;
  /**
   * Its properties as JSON text, as stored. Kept as text rather than parsed: a million cached persons are then a
   * million strings instead of several million small objects for the collector to walk, and only the few a batch
   * changes are ever parsed (docs/architecture.md#what-measurements-taught).
   */
  readonly properties: string;
  readonly isIdentified: boolean;
  readonly isDeleted: boolean;
  readonly createdAt: Timestamp;
  readonly version: number;
}

/** Where a distinct ID points. */
export interface Link {
  readonly personId: string;
  readonly version: number;
}

/**
 * The version of a personless link: written for an ID whose only events said `$process_person_profile: false`,
 * to the person its first profile would make (`personIdFor`), with no facts behind it. Below every derived link,
 * so the first derivation that includes the ID replaces it.
 */
export const PERSONLESS = 0;

/** Whether a link was written by personless events alone (no person row exists for it yet). */
export function isPersonless(link: Link): boolean {
  return link.version === PERSONLESS;
}
