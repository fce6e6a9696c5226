/**
 * How a result in each output format reaches the client as one result, as a server sends it. The engine streams
 * a result block by block and formats each block as a result of its own: a JSON document, a Parquet file, a
 * header, each time. So:
 * - row formats, whose blocks simply follow each other, stream as they come (bounded memory);
 * - row formats with a header (`*WithNames`, `*WithNamesAndTypes`) stream too, each block after the first without
 *   its header;
 * - the progress formats (`JSONEachRowWithProgress` and its kin) stream, their `meta` line once; the engine's
 *   stream has no progress rows;
 * - every other format (JSON and its variants with `rows`, `statistics`, `totals` and `rows_before_limit_at_least`;
 *   XML; Parquet, Arrow, ORC, Avro; Pretty, Markdown, Vertical) is formatted once, over the whole result, which the
 *   port then holds (at most `QUERY_MAX_RESULT_MIB`).
 */
type Framing =
  | { readonly kind: "rows" }
  /** `header` measures the header at the start of a block's output. */
  | { readonly kind: "header"; readonly header: (block: Uint8Array) => number }
  | { readonly kind: "whole" };

/** Formats whose blocks' outputs, one after another, are the whole result's. */
const ROWS = new Set(
  [
    "TabSeparated",
    "TSV",
    "TabSeparatedRaw",
    "TSVRaw",
    "Raw",
    "CSV",
    "JSONEachRow",
    "JSONLines",
    "NDJSON",
    "JSONL",
    "JSONStringsEachRow",
    "JSONCompactEachRow",
    "JSONCompactStringsEachRow",
    "PrettyJSONEachRow",
    "PrettyJSONLines",
    "PrettyNDJSON",
    "RowBinary",
    "Native",
    "Values",
    "TSKV",
    "LineAsString",
    "RawBLOB",
    "CustomSeparated",
    "BSONEachRow",
    "MsgPack",
    "Null",
  ].map((name) => name.toLowerCase()),
);

/** Row formats with a header of names (and types), by the header's lines. */
const TEXT_HEADERS =
  /^(tabseparated|tsv|tabseparatedraw|tsvraw|raw|csv|jsoncompacteachrow|jsoncompactstringseachrow|customseparated|lineasstring)withnames(andtypes)?$/;

export function framingOf(format: string): Framing {
  const name = format.toLowerCase();
  if (ROWS.has(name)) return { kind: "rows" };
  const text = TEXT_HEADERS.exec(name);
  if (text) {
    const lines = text[2] ? 2 : 1;
    return { kind: "header", header: (block) => (text[1] === "csv" ? csvRecords : textLines)(block, lines) };
  }
  // the progress formats open each block's output with a line of the columns' names and types
  if (/^json(compact)?(strings)?eachrowwithprogress$/.test(name)) {
    return { kind: "header", header: (block) => (startsWith(block, '{"meta"') ? textLines(block, 1) : 0) };
  }
  const binary = /^rowbinarywithnames(andtypes)?$/.exec(name);
  if (binary) return { kind: "header", header: (block) => rowBinaryHeader(block, binary[1] ? 2 : 1) };
  return { kind: "whole" };
}

const startsWith = (block: Uint8Array, text: string) =>
  Buffer.from(block.buffer, block.byteOffset, Math.min(block.byteLength, text.length)).toString() === text;

/** The length of the first `count` lines (text formats escape line breaks in names and types). */
function textLines(block: Uint8Array, count: number): number {
  let position = 0;
  for (let line = 0; line < count; line++) {
    const end = block.indexOf(0x0a, position);
    if (end < 0) return block.byteLength;
    position = end + 1;
  }
  return position;
}

/** The length of the first `count` CSV records, whose quoted fields may hold line breaks. */
function csvRecords(block: Uint8Array, count: number): number {
  let quoted = false;
  let records = 0;
  for (let position = 0; position < block.byteLength; position++) {
    const byte = block[position];
    if (byte === 0x22)
      quoted = !quoted; // a doubled quote inside a field toggles twice
    else if (byte === 0x0a && !quoted && ++records === count) return position + 1;
  }
  return block.byteLength;
}

/** RowBinaryWithNames(AndTypes): the column count, then each name (and each type) as a length and its bytes. */
function rowBinaryHeader(block: Uint8Array, lists: number): number {
  let position = 0;
  const varint = () => {
    let value = 0;
    for (let shift = 0; position < block.byteLength; shift += 7) {
      const byte = block[position++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) break;
    }
    return value;
  };
  const columns = varint();
  for (let string = 0; string < columns * lists; string++) {
    const length = varint(); // read first: `position += varint()` would add to the position before the length
    position += length;
  }
  return Math.min(position, block.byteLength);
}

/** The blocks' outputs after the first, each without the header the first one already sent. */
export function withoutRepeatedHeaders(header: (block: Uint8Array) => number) {
  let first: Uint8Array | undefined;
  return (block: Uint8Array): Uint8Array => {
    if (first === undefined) {
      first = block.subarray(0, header(block));
      return block;
    }
    const length = first.byteLength;
    const repeats = block.byteLength >= length && Buffer.compare(block.subarray(0, length), first) === 0;
    return repeats ? block.subarray(length) : block;
  };
}
