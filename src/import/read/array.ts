import type { Position } from "../checkpoint";
import type { Line, UnreadableLine } from "./types";

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
  const reader = new ArrayReader(maxBytes, from);
  for await (const chunk of skipBytes(chunks, from.offset)) yield* reader.read(chunk);
  const unfinished = reader.end();
  if (unfinished !== undefined) yield unfinished;
}

/** `chunks` without their first `count` bytes, which a resumed read does not read again. */
async function* skipBytes(chunks: AsyncIterable<Uint8Array>, count: number): AsyncGenerator<Uint8Array> {
  let skip = count;
  for await (const whole of chunks) {
    const chunk = skip > 0 ? whole.subarray(Math.min(skip, whole.length)) : whole;
    skip -= whole.length - chunk.length;
    yield chunk;
  }
}

/** Where the scan is in the array: before its `[`, inside it (a resumed read always is), or past its `]`. */
type Place = "before" | "inside" | "after";

/** The element being read. */
interface OpenElement {
  /** The line it starts on, which numbers it. */
  readonly number: number;
  readonly syntax: ElementSyntax;
  readonly bytes: ElementBytes;
}

/**
 * The scan of one array, a chunk at a time: where it is in the stream and in the array, and the element being
 * read, which a chunk's end can cut anywhere (inside a string, an escape or a character).
 */
class ArrayReader {
  readonly #maxBytes: number;
  readonly #decoder = new TextDecoder("utf-8", { fatal: true });
  /** In the stream, of the byte being scanned. */
  #offset: number;
  /** Line breaks before that byte: the lines before it. */
  #newlines: number;
  #place: Place;
  #element: OpenElement | undefined;

  constructor(maxBytes: number, from: Position) {
    this.#maxBytes = maxBytes;
    this.#offset = from.offset;
    this.#newlines = from.line;
    this.#place = from.offset > 0 ? "inside" : "before";
  }

  /** The elements that end in `chunk`, the stream's next bytes; the one still open at its end goes on in the next. */
  *read(chunk: Uint8Array): Generator<Line | UnreadableLine> {
    let start = 0; // of the open element's bytes in this chunk
    for (let i = 0; i < chunk.length; i++, this.#offset++) {
      const byte = chunk[i]!;
      const element = this.#element;
      if (element === undefined) {
        if (this.#opens(byte)) start = i;
      } else {
        const end = element.syntax.end(byte);
        if (end !== undefined) {
          const through = end === "with" ? 1 : 0; // this byte is the element's last, or the first after it
          element.bytes.keep(chunk.subarray(start, i + through));
          yield this.#close(element, this.#offset + through);
          if (end === "before" && byte === ARRAY_CLOSE) this.#place = "after"; // `[1, 2]`: the last number ends at ]
        }
      }
      if (byte === NEWLINE) this.#newlines++;
    }
    if (this.#element !== undefined) this.#element.bytes.keep(chunk.subarray(start));
  }

  /** At the stream's end, the element it cut off, if one was open: its text does not parse, and says so. */
  end(): Line | UnreadableLine | undefined {
    return this.#element === undefined ? undefined : this.#close(this.#element, this.#offset);
  }

  /**
   * Between elements: whether `byte` starts one, which is then open. Commas and whitespace separate elements;
   * before the array only its `[` counts, and past its `]` nothing is an element.
   */
  #opens(byte: number): boolean {
    if (WHITESPACE.has(byte) || byte === COMMA) return false;
    if (this.#place !== "inside") {
      if (this.#place === "before" && byte === ARRAY_OPEN) this.#place = "inside";
      return false;
    }
    if (byte === ARRAY_CLOSE) {
      this.#place = "after";
      return false;
    }
    this.#element = {
      number: this.#newlines + 1,
      syntax: new ElementSyntax(byte),
      bytes: new ElementBytes(this.#maxBytes),
    };
    return true;
  }

  /** The open element, ended just before the stream's byte `end`, as read; none is open after it. */
  #close(element: OpenElement, end: number): Line | UnreadableLine {
    this.#element = undefined;
    return element.bytes.line(element.number, { line: this.#newlines, offset: end }, this.#decoder);
  }
}

/**
 * How an element ends: `with` the byte just scanned (the quote, `}` or `]` closing it), or `before` it (a number
 * or literal, which has no closing byte, ends at the comma, whitespace or `]` after it).
 */
type End = "with" | "before";

/**
 * Just enough of JSON's syntax to find where an element ends: how deep in brackets the scan is, and whether in a
 * string (where brackets and commas are text) or just past a backslash in one (where a quote does not close it).
 */
class ElementSyntax {
  #depth: number;
  #inString: boolean;
  #escaped = false;

  /** From the element's first byte. */
  constructor(first: number) {
    this.#depth = OPEN.has(first) ? 1 : 0;
    this.#inString = first === QUOTE;
  }

  /** Whether the element ends at `byte`, the next after the ones scanned (and how), or goes on. */
  end(byte: number): End | undefined {
    if (this.#inString) {
      if (this.#escaped) this.#escaped = false;
      else if (byte === BACKSLASH) this.#escaped = true;
      else if (byte === QUOTE) {
        this.#inString = false;
        if (this.#depth === 0) return "with"; // an element that is a string
      }
      return undefined;
    }
    if (byte === QUOTE) this.#inString = true;
    else if (OPEN.has(byte)) this.#depth++;
    else if (CLOSE.has(byte)) {
      if (this.#depth === 0) return "before"; // the array's ] after a number or literal
      this.#depth--;
      if (this.#depth === 0) return "with";
    } else if (this.#depth === 0 && (byte === COMMA || WHITESPACE.has(byte))) return "before";
    return undefined;
  }
}

/**
 * The bytes of an element, as subarrays of the chunks they came in (joined only when it ends), up to `maxBytes`:
 * past that they are let go, so that memory stays bounded, and the element is only reported as too long.
 */
class ElementBytes {
  readonly #maxBytes: number;
  #parts: Uint8Array[] = [];
  #length = 0;
  #tooLong = false;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  keep(bytes: Uint8Array): void {
    if (this.#tooLong) return;
    if (this.#length + bytes.length > this.#maxBytes) {
      this.#tooLong = true;
      this.#parts = [];
      return;
    }
    this.#parts.push(bytes);
    this.#length += bytes.length;
  }

  /** The element, numbered `number`, with its text, or why it has none. */
  line(number: number, after: Position, decoder: TextDecoder): Line | UnreadableLine {
    if (this.#tooLong) return { number, reason: "line too long", after };
    const parts = this.#parts;
    try {
      return { number, text: decoder.decode(parts.length === 1 ? parts[0]! : Buffer.concat(parts)), after };
    } catch {
      return { number, reason: "not UTF-8", after };
    }
  }
}
