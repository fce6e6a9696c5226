import { type Token, tokens } from "./tokens";

/** An INSERT whose data came with it: the statement, ending in `FORMAT <name>`, and the data's bytes. */
interface InlineInsert {
  readonly statement: string;
  readonly data: Uint8Array;
  /** The text before the data, as the client sent it. */
  readonly sent: string;
}

/** As on ClickHouse: the query is the `query` parameter, a line break, and the body. */
export function queryText(query: string, body: Uint8Array): string {
  const rest = new TextDecoder().decode(body);
  return query === "" ? rest : rest === "" ? query : `${query}\n${rest}`;
}

/** What the query log keeps of a request: its text, up to an INSERT's data. */
export function sentText(query: string, body: Uint8Array, headBytes: number): string {
  return splitInsert(query, body, headBytes)?.sent ?? queryText(query, body.subarray(0, headBytes));
}

/**
 * Splits `INSERT … FORMAT <name> <data>` and `INSERT … VALUES <data>` as ClickHouse's HTTP interface does: the
 * request's text is the `query` parameter, a line break and the body, and the data starts right after `VALUES`,
 * or after the format's name, its blanks and one line break. Anything else (`INSERT … SELECT`, or no INSERT) is
 * no inline insert. Only the first `headBytes` are searched for the statement's end: the statement is a query
 * text, bounded like one.
 */
export function splitInsert(query: string, body: Uint8Array, headBytes: number): InlineInsert | undefined {
  const queryBytes = new TextEncoder().encode(query);
  const separator = query !== "" && body.byteLength > 0 ? 1 : 0;
  // where the body starts in the request's text; only the head is put together, never a copy of the whole body
  const bodyStart = queryBytes.byteLength + separator;
  const head = new Uint8Array(Math.min(headBytes, bodyStart + body.byteLength));
  head.set(queryBytes.subarray(0, head.byteLength), 0);
  if (separator && bodyStart <= head.byteLength) head[queryBytes.byteLength] = 0x0a;
  if (bodyStart < head.byteLength) head.set(body.subarray(0, head.byteLength - bodyStart), bodyStart);
  // one character a byte, so that positions in the text are positions in the bytes
  const found = dataStart(new TextDecoder("latin1").decode(head));
  if (found === undefined) return undefined;
  const statement = new TextDecoder().decode(head.subarray(0, found.statementEnd)) + found.suffix;
  const sent = new TextDecoder().decode(head.subarray(0, found.dataStart));
  const data =
    found.dataStart >= bodyStart
      ? body.subarray(found.dataStart - bodyStart)
      : Buffer.concat([queryBytes.subarray(found.dataStart), new Uint8Array(separator).fill(0x0a), body]);
  return { statement, data, sent };
}

function dataStart(head: string): { statementEnd: number; suffix: string; dataStart: number } | undefined {
  // read lazily: the statement's end comes long before the data's
  const words = (function* () {
    for (const token of tokens(head)) if (token.kind !== "space" && token.kind !== "comment") yield token;
  })();
  const next = (): Token | undefined => words.next().value ?? undefined;
  if (next()?.text.toUpperCase() !== "INSERT") return undefined;
  let depth = 0;
  for (let token = next(); token !== undefined; token = next()) {
    if (token.text === "(") depth++;
    else if (token.text === ")") depth--;
    if (depth !== 0 || token.kind !== "word") continue;
    const word = token.text.toUpperCase();
    if (word === "SELECT" || word === "WITH") return undefined;
    if (word === "VALUES") {
      const end = token.start + token.text.length;
      return { statementEnd: token.start, suffix: "FORMAT Values", dataStart: end };
    }
    if (word === "FORMAT") {
      const name = next();
      if (name?.kind !== "word") return undefined;
      const end = name.start + name.text.length;
      return { statementEnd: end, suffix: "", dataStart: end + /^[ \t\f]*\r?\n?/.exec(head.slice(end))![0].length };
    }
  }
  return undefined;
}
