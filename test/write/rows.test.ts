import { describe, expect, test } from "bun:test";
import { type EventRow, eventInserts } from "../../src/write/rows";

/** A row whose timestamp falls on the UTC day `daysAfter2026` days after 1 January 2026. */
function rowOn(daysAfter2026: number, uuid: string): EventRow {
  const day = new Date(Date.UTC(2026, 0, 1 + daysAfter2026)).toISOString().slice(0, 10);
  return { uuid, timestamp: `${day} 12:00:00.000000` } as EventRow;
}

describe("eventInserts", () => {
  test("a flush within a few days is one insert, in order", () => {
    const rows = [rowOn(3, "a"), rowOn(2, "b"), rowOn(3, "c")];
    const inserts = eventInserts(rows);
    expect(inserts).toHaveLength(1);
    expect(inserts[0]!.map((row) => row.uuid)).toEqual(["a", "b", "c"]);
  });

  test("rows over more than 100 days (the partitions of events) are split into inserts of at most 100 days, every row once", () => {
    const rows = Array.from({ length: 250 }, (_, i) => rowOn(i % 150, `e${i}`));
    const inserts = eventInserts(rows);
    expect(inserts).toHaveLength(2);
    for (const insert of inserts) {
      expect(new Set(insert.map((row) => row.timestamp.slice(0, 10))).size).toBeLessThanOrEqual(100);
    }
    expect(
      inserts
        .flat()
        .map((row) => row.uuid)
        .sort(),
    ).toEqual(rows.map((row) => row.uuid).sort());
  });
});
