import { expect, test } from "bun:test";
import { chunkByBytes, literal, literalList, MAX_LIST_BYTES } from "../../src/storage/sql";
import { openDb, uniqueDatabase } from "../helpers/service";

const literalBytes = (chunk: readonly string[]) => Buffer.byteLength(literalList(chunk));

test("ID lists are split by the size of their literals, not their count", () => {
  const short = Array.from({ length: 5_000 }, (_, i) => `u${i}`);
  expect(chunkByBytes(short)).toEqual([short]); // small IDs: one query, however many

  // 200-character IDs of multi-byte characters take 400 bytes each
  const long = Array.from({ length: 2_000 }, (_, i) => `${"é".repeat(199)}${i % 10}`);
  const chunks = chunkByBytes(long);
  expect(chunks.length).toBeGreaterThan(1);
  expect(chunks.flat()).toEqual(long);
  for (const chunk of chunks) expect(literalBytes(chunk)).toBeLessThanOrEqual(MAX_LIST_BYTES + 2);
});

test("a value larger than the budget still gets a chunk of its own; an empty list none", () => {
  expect(chunkByBytes(["a".repeat(100), "b"], 50)).toEqual([["a".repeat(100)], ["b"]]);
  expect(chunkByBytes([])).toEqual([]);
});

test("any string, hostile ones included, reads back from ClickHouse as itself", async () => {
  const hostile = [
    "plain",
    "it's",
    "back\\slash",
    "\\'; DROP TABLE x; --",
    "nul\0byte",
    "new\nline\ttab\r",
    "\\0 not a nul",
    "emoji 😀 and é",
    "\u2028\u2029",
    "'",
    "\\",
    "",
  ];
  const db = await openDb(uniqueDatabase());
  try {
    const rows = await db.rows<{ value: string }>(`SELECT arrayJoin([${hostile.map(literal).join(", ")}]) AS value`);
    expect(rows.map((row) => row.value)).toEqual(hostile);
    // and as a list for IN, which is how the storage uses them
    const found = await db.rows<{ n: string | number }>(
      `SELECT countIf(value IN ${literalList(hostile)}) AS n FROM (SELECT arrayJoin([${hostile.map(literal).join(", ")}]) AS value)`,
    );
    expect(Number(found[0]!.n)).toBe(hostile.length);
  } finally {
    await db.close();
  }
});
