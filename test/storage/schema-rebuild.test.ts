import { expect, test } from "bun:test";
import { daysInChunks } from "../../src/storage/schema/rebuild";

// The refill of a rebuilt `sessions` (schema.test.ts runs one on the engine) inserts whole days, as many as fit.
test("days are joined in order into runs of at most the limit; a larger day is a run alone", () => {
  const days = [
    { day: "2026-01-01", events: 40 },
    { day: "2026-01-02", events: "50" }, // as a server's JSON gives a UInt64
    { day: "2026-01-05", events: 20 },
    { day: "2026-01-06", events: 250 },
    { day: "2026-01-07", events: 100 },
    { day: "2026-01-08", events: 1 },
  ];
  expect(daysInChunks(days, 100)).toEqual([
    { from: "2026-01-01", to: "2026-01-02" },
    { from: "2026-01-05", to: "2026-01-05" },
    { from: "2026-01-06", to: "2026-01-06" },
    { from: "2026-01-07", to: "2026-01-07" },
    { from: "2026-01-08", to: "2026-01-08" },
  ]);
  expect(daysInChunks(days, 1_000)).toEqual([{ from: "2026-01-01", to: "2026-01-08" }]);
  expect(daysInChunks([], 100)).toEqual([]);
});
