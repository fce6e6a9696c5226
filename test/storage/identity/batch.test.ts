import { describe, expect, test } from "bun:test";
import type { CapturedEvent, Timestamp } from "../../../src/event";
import { IdentityBatch } from "../../../src/storage/identity/batch";
import { type Person, personIdFor } from "../../../src/storage/identity/person";
import { personIntentOf } from "../../../src/storage/identity/person-rules";
import { VersionClock } from "../../../src/storage/identity/version-clock";

// The per-batch rules run without ClickHouse: the test fills the batch the way the resolver would.
const at = "2024-01-01 00:00:00.000000" as Timestamp;
const event = (name: string, distinctId: string, properties: Record<string, unknown> = {}) =>
  personIntentOf({ event: name, distinctId, properties, timestamp: at } as unknown as CapturedEvent);

function known(batch: IdentityBatch, links: Record<string, string>): void {
  for (const [distinctId, personId] of Object.entries(links)) {
    batch.links.put(distinctId, { personId, version: 1 }, "loaded");
    const person: Person = {
      id: personId,
      distinctId,
      properties: JSON.stringify({ [`from_${distinctId}`]: true }),
      isIdentified: false,
      isDeleted: false,
      createdAt: at,
      version: 1,
    };
    if (batch.persons.get(personId) === undefined) batch.persons.put(personId, person, "loaded");
  }
}

describe("IdentityBatch", () => {
  test("chained merges in one batch send the IDs only ClickHouse knew to the last survivor", () => {
    const batch = new IdentityBatch(new VersionClock());
    known(batch, { a: "pa", b: "pb", c: "pc" });
    expect(batch.apply(event("$identify", "a", { $anon_distinct_id: "b" }))).toBe("pa"); // pb → pa
    expect(batch.apply(event("$create_alias", "c", { alias: "a" }))).toBe("pc"); // pa → pc
    expect(batch.mergedAway().sort()).toEqual(["pa", "pb"]);

    // IDs the batch never read: one on each merged-away person, and one the batch itself already moved.
    batch.moveStragglers(
      new Map([
        ["b-old", { personId: "pb", version: 5 }],
        ["a-old", { personId: "pa", version: 5 }],
        ["b", { personId: "pb", version: 1 }],
      ]),
    );
    const links = Object.fromEntries(batch.linksToWrite().map(([id, link]) => [id, link.personId]));
    // c was on pc already, so only the IDs that moved are written
    expect(links).toEqual({ a: "pc", b: "pc", "b-old": "pc", "a-old": "pc" });
    expect(batch.links.get("c")?.personId).toBe("pc");
    // a moved straggler gets a version above the one it had
    expect(batch.links.get("b-old")!.version).toBeGreaterThan(5);

    const persons = Object.fromEntries(batch.changedPersons().map((p) => [p.id, p]));
    expect(JSON.parse(persons.pc!.properties)).toEqual({ from_a: true, from_b: true, from_c: true });
    expect([persons.pa?.isDeleted, persons.pb?.isDeleted, persons.pc?.isDeleted]).toEqual([true, true, false]);
  });

  test("apply is synchronous and reads nothing: a new ID gets its deterministic person", () => {
    const batch = new IdentityBatch(new VersionClock());
    expect(batch.apply(event("$pageview", "new-user"))).toBe(personIdFor("new-user"));
    expect(batch.mergedAway()).toEqual([]);
    expect(batch.linksToWrite().map(([id]) => id)).toEqual(["new-user"]);
  });
});
