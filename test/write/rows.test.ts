import { describe, expect, test } from "bun:test";
import { type EventRow, eventInserts } from "../../src/write/rows";

/** A row whose timestamp falls in the month `monthsAfter2000` months after January 2000. */
function rowIn(monthsAfter2000: number, uuid: string): EventRow {
  const year = 2000 + Math.floor(monthsAfter2000 / 12);
  const month = String((monthsAfter2000 % 12) + 1).padStart(2, "0");
  return { uuid, timestamp: `${year}-${month}-15 12:00:00.000000` } as EventRow;
}

describe("eventInserts", () => {
  test("a flush within a few months is one insert, in order", () => {
    const rows = [rowIn(3, "a"), rowIn(2, "b"), rowIn(3, "c")];
    const inserts = eventInserts(rows);
    expect(inserts).toHaveLength(1);
    expect(inserts[0]!.map((row) => row.uuid)).toEqual(["a", "b", "c"]);
  });

  test("rows over more than 100 months are split into inserts of at most 100 months, every row once", () => {
    const rows = Array.from({ length: 250 }, (_, i) => rowIn(i % 150, `e${i}`));
    const inserts = eventInserts(rows);
    expect(inserts).toHaveLength(2);
    for (const insert of inserts) {
      expect(new Set(insert.map((row) => row.timestamp.slice(0, 7))).size).toBeLessThanOrEqual(100);
    }
    expect(
      inserts
        .flat()
        .map((row) => row.uuid)
        .sort(),
    ).toEqual(rows.map((row) => row.uuid).sort());
  });
});
