import { type Position, START } from "../checkpoint";
import { readArray } from "./array";
import type { Line, UnreadableLine } from "./types";

const NEWLINE = 0x0a;

/**
 * The non-empty lines of a byte stream, in bounded memory: a line of more than `maxBytes` is reported and skipped
 * to its end without being kept. Line numbers count every line, empty ones too, as an editor shows them. Starting
 * `from` a position skips its bytes unread and numbers the lines after it.
 */
export async function* readLines(
  bytes: AsyncIterable<Uint8Array>,
  maxBytes: number,
  from: Position = START,
): AsyncGenerator<Line | UnreadableLine> {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let parts: Uint8Array[] = [];
  let length = 0;
  let tooLong = false;
  let number = from.line + 1;
  let skip = from.offset;
  let end = from.offset; // bytes of the stream up to the line being read
  const finish = (): Line | UnreadableLine | undefined => {
    const line = number++;
    const after = { line, offset: end };
    if (tooLong) return { number: line, reason: "line too long", after };
    if (length === 0) return undefined;
    const joined = parts.length === 1 ? parts[0]! : Buffer.concat(parts, length);
    let text: string;
    try {
      text = decoder.decode(joined);
    } catch {
      return { number: line, reason: "not UTF-8", after };
    }
    if (text.endsWith("\r")) text = text.slice(0, -1);
    return text.trim() === "" ? undefined : { number: line, text, after };
  };
  for await (const whole of bytes) {
    const chunk = skip > 0 ? whole.subarray(Math.min(skip, whole.length)) : whole;
    skip -= whole.length - chunk.length;
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const stop = newline === -1 ? chunk.length : newline;
      if (!tooLong) {
        if (length + (stop - start) > maxBytes) {
          tooLong = true;
          parts = [];
          length = 0;
        } else if (stop > start) {
          parts.push(chunk.subarray(start, stop));
          length += stop - start;
        }
      }
      end += stop - start;
      if (newline === -1) break;
      end += 1;
      const line = finish();
      if (line !== undefined) yield line;
      parts = [];
      length = 0;
      tooLong = false;
      start = newline + 1;
    }
  }
  const last = finish();
  if (last !== undefined) yield last;
}

/**
 * A source's lines, or, when it is one JSON array spread over lines (its first line starts an array that does not
 * end on it, or is too long to hold), the elements of that array (`array.ts`). Decided from the first line with
 * anything on it, held meanwhile. A byte order mark at the start is dropped.
 */
export async function* readSource(
  bytes: AsyncIterable<Uint8Array>,
  maxBytes: number,
  from: Position = START,
): AsyncGenerator<Line | UnreadableLine> {
  const iterator = bytes[Symbol.asyncIterator]();
  const head: Uint8Array[] = [];
  let held = 0;
  let first: number | undefined; // of the first byte that is not whitespace, in the bytes held
  let lineEnd: number | undefined; // of the newline ending that first line
  for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
    // a byte order mark, as Windows tools write, is not part of the first line (positions count without it)
    const chunk = held === 0 && hasByteOrderMark(next.value) ? next.value.subarray(3) : next.value;
    if (first === undefined) {
      const at = chunk.findIndex((byte) => !WHITESPACE.has(byte));
      if (at !== -1) first = held + at;
    }
    if (first !== undefined) {
      const from = Math.max(0, first - held);
      const newline = chunk.indexOf(NEWLINE, from);
      if (newline !== -1) lineEnd = held + newline;
    }
    head.push(chunk);
    held += chunk.length;
    if (lineEnd !== undefined || held > maxBytes) break;
  }
  const joined = Buffer.concat(head, held);
  const array =
    first !== undefined &&
    joined[first] === ARRAY_OPEN &&
    (lineEnd === undefined ? held > maxBytes : !parses(joined.subarray(first, lineEnd)));
  const chunks = (async function* () {
    if (held > 0) yield joined;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  })();
  yield* array ? readArray(chunks, maxBytes, from) : readLines(chunks, maxBytes, from);
}

const WHITESPACE = new Set([0x20, 0x09, 0x0d, NEWLINE]);
const ARRAY_OPEN = 0x5b;

function hasByteOrderMark(bytes: Uint8Array): boolean {
  return bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
}

function parses(bytes: Uint8Array): boolean {
  try {
    JSON.parse(new TextDecoder().decode(bytes));
    return true;
  } catch {
    return false;
  }
}
