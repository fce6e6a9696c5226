import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ImportError } from "../../../src/import";
import { readLines } from "../../../src/import/read/lines";
import { openSource } from "../../../src/import/read/source";
import { scratchDir } from "../../helpers/scratch";

/** A stream of `chunks`, as a file read in pieces would give them. */
const streamOf = (...chunks: (string | Uint8Array)[]) =>
  new Blob(chunks.map((chunk) => (typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk))).stream();

async function all(bytes: ReadableStream<Uint8Array>, maxBytes = 1024, from = { line: 0, offset: 0 }) {
  const lines: unknown[] = [];
  for await (const line of readLines(bytes, maxBytes, from)) lines.push(line);
  return lines;
}

describe("readLines", () => {
  test("numbers every line as an editor does, skipping empty ones, with or without a final line break", async () => {
    expect(await all(streamOf('{"a":1}\r\n\n  \n{"b":2}'))).toEqual([
      { number: 1, text: '{"a":1}', after: { line: 1, offset: 9 } },
      { number: 4, text: '{"b":2}', after: { line: 4, offset: 20 } },
    ]);
  });

  test("from a position, its bytes are skipped unread and the lines after it numbered on", async () => {
    const text = '{"a":1}\n{"b":2}\n\n{"c":3}\n';
    const chunks = [text.slice(0, 3), text.slice(3, 11), text.slice(11)]; // the position falls inside a chunk
    expect(await all(streamOf(...chunks), 1024, { line: 1, offset: 8 })).toEqual([
      { number: 2, text: '{"b":2}', after: { line: 2, offset: 16 } },
      { number: 4, text: '{"c":3}', after: { line: 4, offset: 25 } },
    ]);
    expect(await all(streamOf(text), 1024, { line: 4, offset: 25 })).toEqual([]);
  });

  test("a line split across chunks, even inside a character, is read whole", async () => {
    const bytes = new TextEncoder().encode('{"name":"Zoë"}\n');
    const at = bytes.indexOf(0xc3) + 1; // between the two bytes of ë
    expect(await all(streamOf(bytes.subarray(0, at), bytes.subarray(at)))).toEqual([
      { number: 1, text: '{"name":"Zoë"}', after: { line: 1, offset: bytes.length } },
    ]);
  });

  test("a line over the limit is reported by number and skipped without being kept; the next is read", async () => {
    const long = "x".repeat(5000);
    expect(await all(streamOf(`${long.slice(0, 3000)}`, `${long.slice(3000)}\n{"ok":1}\n`), 1024)).toEqual([
      { number: 1, reason: "line too long", after: { line: 1, offset: 5001 } },
      { number: 2, text: '{"ok":1}', after: { line: 2, offset: 5010 } },
    ]);
  });

  test("a line that is not UTF-8 is reported, and the others read", async () => {
    expect(await all(streamOf("{}\n", new Uint8Array([0x7b, 0xff, 0xfe, 0x7d, 0x0a]), "{}\n"))).toEqual([
      { number: 1, text: "{}", after: { line: 1, offset: 3 } },
      { number: 2, reason: "not UTF-8", after: { line: 2, offset: 8 } },
      { number: 3, text: "{}", after: { line: 3, offset: 11 } },
    ]);
  });
});

describe("openSource", () => {
  const dir = scratchDir("ingest-import-source-");

  test("gzip is recognised by its magic bytes, whatever the file is called", async () => {
    const path = join(dir, "events.jsonl"); // no .gz
    writeFileSync(path, Bun.gzipSync('{"a":1}\n{"b":2}\n'));
    const source = await openSource(path);
    expect(source.gzip).toBe(true);
    expect(await all(source.bytes)).toHaveLength(2);
  });

  test("an empty file is no lines", async () => {
    const path = join(dir, "empty.jsonl");
    writeFileSync(path, "");
    expect(await all((await openSource(path)).bytes)).toEqual([]);
  });

  test("a missing file and a directory are refused by name", async () => {
    await expect(openSource(join(dir, "missing.jsonl"))).rejects.toThrow(`${join(dir, "missing.jsonl")}: no such file`);
    await expect(openSource(dir)).rejects.toBeInstanceOf(ImportError);
    await expect(openSource(dir)).rejects.toThrow("is a directory, not a file");
  });
});
