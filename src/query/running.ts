import type { Session } from "chdb";
import { QueryError } from "./errors";
import { framingOf, withoutRepeatedHeaders } from "./formats";
import type { Inspected } from "./inspect";
import type { Releases } from "./setup";

/** A query that has started: its first chunk of output is read, so a query that fails at once has thrown. */
export interface RunningQuery {
  /** The statement's type, as the engine parsed it (`SelectWithUnionQuery`, `InsertQuery`, …). */
  readonly statement: string;
  /** The output format, or undefined when the statement has no output. */
  readonly format: string | undefined;
  readonly writtenRows: number;
  /** Result rows and bytes sent so far. */
  readonly result: { rows: number; bytes: number };
  /** The rest of the output, chunk by chunk; the first one first. Ends, or throws, once; then the query is over. */
  chunks(): AsyncGenerator<Uint8Array>;
  /** Stops the query and frees what it holds (idempotent; the end of `chunks` does it too). */
  close(): void;
}

/**
 * How long past `QUERY_TIMEOUT_S` a query may hold its place: a client that stops reading its result leaves the
 * query paused, out of reach of the engine's own timeout, so the port ends it then.
 */
export const HOLD_GRACE_S = 5;

/** Whether the port has taken a query's place back (`HOLD_GRACE_S`). */
interface Hold {
  readonly expired: boolean;
}

/** Statements whose result the engine streams. */
const STREAMED = new Set(["SelectWithUnionQuery", "SelectIntersectExceptQuery"]);

/**
 * Runs a checked statement in `format` and reads its first chunk. What frees the query (`release`) runs when its
 * output is over, or `HOLD_GRACE_S` past its time limit, whichever comes first; what it holds is pushed on
 * `releases`.
 */
export async function runStatement(
  session: Session,
  inspected: Inspected,
  format: string,
  timeoutS: number,
  release: () => void,
  releases: Releases,
): Promise<RunningQuery> {
  const held = { expired: false };
  const deadline = setTimeout(
    () => {
      held.expired = true;
      release();
    },
    (timeoutS + HOLD_GRACE_S) * 1000,
  );
  releases.push(() => clearTimeout(deadline));
  const framing = framingOf(format);
  if (!STREAMED.has(inspected.statement) || framing.kind === "whole") {
    // chDB streams SELECTs only; the others (SHOW, DESCRIBE, EXPLAIN, DDL) answer little, all at once; and a
    // format that is one document over the whole result is formatted once (formats.ts)
    const result = await session.queryAsync(inspected.formatted, { format });
    return await started(
      inspected.statement,
      format,
      [{ raw: () => result.bytes(), numRows: result.rowsRead }],
      release,
      held,
    );
  }
  const stream = session.queryStream(inspected.formatted, { format });
  releases.push(() => stream.cancel());
  const shape = framing.kind === "header" ? withoutRepeatedHeaders(framing.header) : undefined;
  return await started(inspected.statement, format, stream, release, held, shape);
}

/** A statement that has no output, done. */
export function finished(statement: string, writtenRows: number): RunningQuery {
  return {
    statement,
    format: undefined,
    writtenRows,
    result: { rows: 0, bytes: 0 },
    async *chunks() {},
    close() {},
  };
}

const heldTooLong = () =>
  QueryError.of("TIMEOUT_EXCEEDED", "Timeout exceeded: the result was not read within the query's time limit");

/** A piece of a result, as chDB hands it over. */
interface Chunk {
  raw(): Uint8Array;
  readonly numRows: number;
}

/** Reads the first chunk, so that a query failing at once throws here, before any byte is sent. */
async function started(
  statement: string,
  format: string,
  stream: AsyncIterable<Chunk> | Iterable<Chunk>,
  release: () => void,
  held: Hold,
  /** What each block's output becomes before it is sent (a repeated header dropped). */
  shape: (block: Uint8Array) => Uint8Array = (block) => block,
): Promise<RunningQuery> {
  const iterator = Symbol.asyncIterator in stream ? stream[Symbol.asyncIterator]() : stream[Symbol.iterator]();
  const result = { rows: 0, bytes: 0 };
  const take = (chunk: Chunk) => {
    const bytes = shape(chunk.raw());
    result.rows += chunk.numRows;
    result.bytes += bytes.byteLength;
    return bytes;
  };
  const next = await iterator.next();
  const first = next.done ? undefined : take(next.value);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    release();
  };
  // an answer held whole (not streamed) needs nothing more of its session
  if (first === undefined || !(Symbol.asyncIterator in stream)) close();
  return {
    statement,
    format,
    writtenRows: 0,
    result,
    async *chunks() {
      try {
        if (first === undefined) return;
        yield first;
        for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield take(next.value);
        if (held.expired) throw heldTooLong();
      } catch (error) {
        throw held.expired ? heldTooLong() : QueryError.fromEngine(error);
      } finally {
        close();
      }
    },
    close,
  };
}
