import type { Position } from "../checkpoint";

// What the readers of a source yield, whichever reads it: readLines and readSource (lines.ts) and readArray
// (array.ts). Here rather than in either, so that lines.ts imports array.ts and not the other way round too.

/**
 * A line of a source, numbered from 1, without its line break (or, in a file that is one JSON array, an element
 * of it, numbered by the line it starts on); `after` is the position just past it, where a resumed read starts.
 */
export interface Line {
  readonly number: number;
  readonly text: string;
  readonly after: Position;
}

/** A line that cannot be read as text: too long, or not UTF-8. Its bytes are skipped, never held. */
export interface UnreadableLine {
  readonly number: number;
  readonly reason: "line too long" | "not UTF-8";
  readonly after: Position;
}
