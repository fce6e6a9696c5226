import { expect, test } from "bun:test";
import { chunkByBytes, MAX_LIST_BYTES } from "../../src/storage/clickhouse";

const encodedSize = (chunk: readonly string[]) => chunk.reduce((sum, v) => sum + encodeURIComponent(v).length + 9, 0);

test("ID lists are split by their URL-encoded size, not their count", () => {
  const short = Array.from({ length: 5_000 }, (_, i) => `u${i}`);
  expect(chunkByBytes(short)).toEqual([short]); // small IDs: one query, however many

  // 200-character IDs of multi-byte characters grow ninefold when percent-encoded
  const long = Array.from({ length: 2_000 }, (_, i) => `${"é".repeat(199)}${i % 10}`);
  const chunks = chunkByBytes(long);
  expect(chunks.length).toBeGreaterThan(1);
  expect(chunks.flat()).toEqual(long);
  for (const chunk of chunks) expect(encodedSize(chunk)).toBeLessThanOrEqual(MAX_LIST_BYTES);
});

test("a value larger than the budget still gets a chunk of its own; an empty list none", () => {
  expect(chunkByBytes(["a".repeat(100), "b"], 50)).toEqual([["a".repeat(100)], ["b"]]);
  expect(chunkByBytes([])).toEqual([]);
});
