import { type Position, START } from "./checkpoint";

/** A line of a source, numbered from 1, without its line break; `end` is the byte offset just past it. */
export interface Line {
  readonly number: number;
  readonly text: string;
  readonly end: number;
}

/** A line that cannot be read as text: too long, or not UTF-8. Its bytes are skipped, never held. */
export interface UnreadableLine {
  readonly number: number;
  readonly reason: "line too long" | "not UTF-8";
  readonly end: number;
}

const NEWLINE = 0x0a;

/**
 * The non-empty lines of a byte stream, in bounded memory: a line of more than `maxBytes` is reported and skipped
 * to its end without being kept. Line numbers count every line, empty ones too, as an editor shows them. Starting
 * `from` a position skips its bytes unread and numbers the lines after it.
 */
export async function* readLines(
  bytes: ReadableStream<Uint8Array>,
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
    if (tooLong) return { number: line, reason: "line too long", end };
    if (length === 0) return undefined;
    const joined = parts.length === 1 ? parts[0]! : Buffer.concat(parts, length);
    let text: string;
    try {
      text = decoder.decode(joined);
    } catch {
      return { number: line, reason: "not UTF-8", end };
    }
    if (text.endsWith("\r")) text = text.slice(0, -1);
    return text.trim() === "" ? undefined : { number: line, text, end };
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
