import { type ClickHouse, literal } from "../storage";

/** A predicate, and a value it names (a digest) by which its mutation is found again in `system.mutations`. */
export interface Hashed {
  readonly where: string;
  readonly marker: string;
}

/** Values one predicate names: about 90 bytes each, so a statement stays well within the engine's 256 KiB. */
const VALUES_PER_PREDICATE = 1000;

/**
 * Predicates that `column` is one of `values`, each for a chunk of them, that name no value: a mutation's text is
 * kept with its table (`system.mutations`, a file beside the parts) long after it ran, and an erasure must not
 * leave the IDs it erased there. A row is picked by its value's cityHash64 (cheap; a row whose hash differs is not
 * looked at again), then by its SHA-256, which no two values share, so no other row is ever taken. The digests
 * are computed by the engine, from the same literals a read would compare.
 */
export async function hashedIn(db: ClickHouse, column: string, values: readonly string[]): Promise<Hashed[]> {
  const digests = await db.rowsIn<{ city: string; sha: string }>(
    values,
    (list) => `SELECT toString(cityHash64(value)) AS city, hex(SHA256(value)) AS sha
      FROM (SELECT arrayJoin([${list.slice(1, -1)}]) AS value)`,
  );
  const predicates: Hashed[] = [];
  for (let at = 0; at < digests.length; at += VALUES_PER_PREDICATE) {
    const chunk = digests.slice(at, at + VALUES_PER_PREDICATE);
    predicates.push({
      where:
        `cityHash64(${column}) IN (${chunk.map((d) => d.city).join(", ")}) ` +
        `AND hex(SHA256(${column})) IN (${chunk.map((d) => literal(d.sha)).join(", ")})`,
      marker: chunk[0]!.sha,
    });
  }
  return predicates;
}
