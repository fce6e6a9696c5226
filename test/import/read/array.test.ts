import { describe, expect, test } from "bun:test";
import { readArray } from "../../../src/import/read/array";
import { readSource } from "../../../src/import/read/lines";

// A file that is one JSON array spread over lines (PostHog's JSON export, `jq .` of an array), read element by
// element in bounded memory, and told apart from JSON lines by its first line.

/** `text` in chunks of `size` bytes, so that boundaries fall inside strings, escapes and characters. */
async function* chunked(text: string, size: number) {
  const bytes = new TextEncoder().encode(text);
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function all(source: AsyncGenerator<unknown>) {
  const read: unknown[] = [];
  for await (const item of source) read.push(item);
  return read;
}

const PRETTY = `[
  {
    "event": "a",
    "properties": { "quote": "\\"}]", "list": [1, [2]] }
  },
  {"event": "b"}, "Zoë",
  42,
  true
]
`;
const ELEMENTS = [
  '{\n    "event": "a",\n    "properties": { "quote": "\\"}]", "list": [1, [2]] }\n  }',
  '{"event": "b"}',
  '"Zoë"',
  "42",
  "true",
];

describe("readArray", () => {
  for (const size of [1, 2, 7, 4096]) {
    test(`each element whole, numbered by its first line, whatever the chunks (${size} bytes)`, async () => {
      const read = (await all(readArray(chunked(PRETTY, size), 1024, { line: 0, offset: 0 }))) as {
        number: number;
        text: string;
      }[];
      expect(read.map((element) => element.text)).toEqual(ELEMENTS);
      expect(read.map((element) => element.number)).toEqual([2, 6, 6, 7, 8]);
      for (const element of read) expect(JSON.parse(element.text)).toBeDefined();
    });
  }

  test("resumed after an element, it goes on with the next, numbered as before", async () => {
    const read = (await all(readArray(chunked(PRETTY, 5), 1024, { line: 0, offset: 0 }))) as {
      after: { line: number; offset: number };
    }[];
    const resumed = await all(readArray(chunked(PRETTY, 5), 1024, read[1]!.after));
    expect(resumed).toEqual(read.slice(2));
  });

  test("an element over the limit is reported and skipped unheld; a cut-off last one is given as it is", async () => {
    const text = `[{"big": "${"x".repeat(5000)}"},\n{"ok": 1},\n{"cut": `;
    const read = await all(readArray(chunked(text, 100), 1024, { line: 0, offset: 0 }));
    expect(read).toMatchObject([
      { number: 1, reason: "line too long" },
      { number: 2, text: '{"ok": 1}' },
      { number: 3, text: '{"cut": ' },
    ]);
  });

  for (const size of [1, 4096]) {
    test(`only what is inside the array; each end and position exact; a string not UTF-8 told (${size} bytes)`, async () => {
      const bytes = Buffer.concat([
        Buffer.from('x [\n  1, "a\\"]",\n  {"b": [2]} , "'),
        Buffer.from([0xff]),
        Buffer.from('",\n  true]\n[3]\n'),
      ]);
      const chunks = async function* () {
        for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
      };
      expect(await all(readArray(chunks(), 1024, { line: 0, offset: 0 }))).toEqual([
        { number: 2, text: "1", after: { line: 1, offset: 7 } }, // a number ends at the comma after it
        { number: 2, text: '"a\\"]"', after: { line: 1, offset: 15 } }, // an escaped quote does not close a string
        { number: 3, text: '{"b": [2]}', after: { line: 2, offset: 29 } },
        { number: 3, reason: "not UTF-8", after: { line: 2, offset: 35 } },
        { number: 4, text: "true", after: { line: 3, offset: 43 } }, // a literal ends at the array's ], the last
      ]);
    });
  }
});

describe("readSource", () => {
  const texts = async (text: string, maxBytes = 1024) =>
    ((await all(readSource(chunked(text, 3), maxBytes))) as { text?: string; reason?: string }[]).map(
      (entry) => entry.text ?? entry.reason,
    );

  test("JSON lines, arrays on a line each included, are read as lines", async () => {
    expect(await texts('\n[{"a":1},{"b":2}]\n{"c":3}\n')).toEqual(['[{"a":1},{"b":2}]', '{"c":3}']);
  });

  test("an array that does not end on its first line is read element by element", async () => {
    expect(await texts(PRETTY)).toEqual(ELEMENTS);
    expect(await texts('  [{"a":1},\n{"b":2}]')).toEqual(['{"a":1}', '{"b":2}']);
  });

  test("a byte order mark at the start (as Windows tools write) is not part of the first line", async () => {
    expect(await texts('\ufeff{"a":1}\n{"b":2}\n')).toEqual(['{"a":1}', '{"b":2}']);
    expect(await texts('\ufeff[\n{"a":1},\n{"b":2}\n]')).toEqual(['{"a":1}', '{"b":2}']);
  });

  test("an array on one line too long to hold is read element by element, not refused whole", async () => {
    const line = `[${Array.from({ length: 200 }, (_, n) => `{"n":${n}}`).join(",")}]`;
    const read = await texts(line, 100);
    expect(read).toHaveLength(200);
    expect(read[199]).toBe('{"n":199}');
  });
});
