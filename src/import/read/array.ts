import type { Position } from "../checkpoint";
import type { Line, UnreadableLine } from "./lines";

const NEWLINE = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN = new Set([0x5b, 0x7b]); // [ {
const CLOSE = new Set([0x5d, 0x7d]); // ] }
const ARRAY_OPEN = 0x5b;
const ARRAY_CLOSE = 0x5d;
const WHITESPACE = new Set([0x20, 0x09, 0x0d, NEWLINE]);

/**
 * The elements of a byte stream that is one JSON array spread over many lines (an export written as
 * `[\n  {...},\n  {...}\n]`), each as its JSON text, in bounded memory: an element of more than `maxBytes` is
 * reported and skipped without being kept. The scan only finds where each element starts and ends (strings,
 * escapes, nesting); parsing it is the caller's. An element is numbered by the line it starts on, and `after` it
 * is the position a resumed read starts from, which is always between two elements, inside the array.
 */
export async function* readArray(
  chunks: AsyncIterable<Uint8Array>,
  maxBytes: number,
  from: Position,
): AsyncGenerator<Line | UnreadableLine> {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let skip = from.offset;
  let offset = from.offset; // of the byte being scanned
  let newlines = from.line; // before it
  // before the array's [, inside it (a resumed read always is), or past its ]
  let state: "before" | "inside" | "after" = from.offset > 0 ? "inside" : "before";
  // the element being read
  let reading = false;
  let startLine = 0;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let parts: Uint8Array[] = [];
  let length = 0;
  let tooLong = false;

  const keep = (bytes: Uint8Array) => {
    if (tooLong) return;
    if (length + bytes.length > maxBytes) {
      tooLong = true;
      parts = [];
      return;
    }
    parts.push(bytes);
    length += bytes.length;
  };
  const element = (end: number): Line | UnreadableLine => {
    const after = { line: newlines, offset: end };
    const number = startLine;
    const held = parts;
    const wasTooLong = tooLong;
    reading = false;
    parts = [];
    length = 0;
    tooLong = false;
    if (wasTooLong) return { number, reason: "line too long", after };
    try {
      return { number, text: decoder.decode(held.length === 1 ? held[0]! : Buffer.concat(held)), after };
    } catch {
      return { number, reason: "not UTF-8", after };
    }
  };

  for await (const whole of chunks) {
    const chunk = skip > 0 ? whole.subarray(Math.min(skip, whole.length)) : whole;
    skip -= whole.length - chunk.length;
    let start = 0; // of the element's bytes in this chunk
    for (let i = 0; i < chunk.length; i++, offset++) {
      const byte = chunk[i]!;
      if (reading) {
        let ends = false; // the element ends after this byte
        let endsBefore = false; // a number or literal ends before it
        if (inString) {
          if (escaped) escaped = false;
          else if (byte === BACKSLASH) escaped = true;
          else if (byte === QUOTE) {
            inString = false;
            ends = depth === 0;
          }
        } else if (byte === QUOTE) inString = true;
        else if (OPEN.has(byte)) depth++;
        else if (CLOSE.has(byte)) {
          if (depth === 0) endsBefore = true;
          else ends = --depth === 0;
        } else if (depth === 0 && (byte === COMMA || WHITESPACE.has(byte))) endsBefore = true;
        if (ends || endsBefore) {
          keep(chunk.subarray(start, ends ? i + 1 : i));
          yield element(ends ? offset + 1 : offset);
          if (endsBefore && byte === ARRAY_CLOSE) state = "after"; // `[1, 2]`: the last number ends at ]
        }
        if (byte === NEWLINE) newlines++;
        continue;
      }
      if (byte === NEWLINE) newlines++;
      if (WHITESPACE.has(byte) || byte === COMMA) continue;
      if (state !== "inside") {
        if (state === "before" && byte === ARRAY_OPEN) state = "inside";
        continue; // past the array's end nothing is an element
      }
      if (byte === ARRAY_CLOSE) {
        state = "after";
        continue;
      }
      reading = true;
      startLine = newlines + 1;
      start = i;
      depth = OPEN.has(byte) ? 1 : 0;
      inString = byte === QUOTE;
      escaped = false;
    }
    if (reading) keep(chunk.subarray(start));
  }
  if (reading) yield element(offset); // unfinished: its text does not parse, and says so
}
