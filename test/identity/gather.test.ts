import { describe, expect, test } from "bun:test";
import type { FactRow } from "../../src/identity/facts";
import { gatherFacts } from "../../src/identity/gather";

describe("gatherFacts", () => {
  // A repair sweep at startup over a million web events read more facts at once than a spread's arguments may
  // hold (`push(...found)`: RangeError, the service did not start).
  test("gathers more facts than a call's arguments may hold", async () => {
    const fact = { distinct_id: "user-1", kind: "property", name: "plan" } as FactRow;
    const many: FactRow[] = Array.from({ length: 1_200_000 }, () => fact);
    const gathered = await gatherFacts(() => ({ links: new Map(), facts: many }), new Set(["user-1"]), new Map(), []);
    expect(gathered.facts).toHaveLength(many.length);
    expect([...gathered.visited]).toEqual(["user-1"]);
  });
});
