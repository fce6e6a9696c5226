/**
 * Values written into SQL text as literals. The storage binds nothing as a query parameter: the embedded engine
 * keeps parameters in state that concurrent queries on other sessions clobber (chDB serializes them through one
 * process-wide chain for that reason), and a flush must never wait behind, or race, another session's query.
 */

/** A string as a ClickHouse literal: backslashes and quotes escaped, and NUL, which would end the text early. */
export function literal(value: string): string {
  return `'${value.replace(/[\\'\0]/g, (char) => (char === "\0" ? "\\0" : `\\${char}`))}'`;
}

/** A name as a ClickHouse identifier, in backquotes. */
export function quoteIdentifier(name: string): string {
  return `\`${name.replace(/[\\`]/g, (char) => `\\${char}`)}\``;
}

/** `database`.`name`, quoted. */
export function tableName(database: string, name: string): string {
  return `${quoteIdentifier(database)}.${quoteIdentifier(name)}`;
}

/**
 * ClickHouse parses at most `max_query_size` bytes of SQL (256 KiB by default), so lists of values are split to
 * keep each query's literals under this many bytes.
 */
export const MAX_LIST_BYTES = 128 * 1024;

/** Splits `values` into runs whose literals (quoted, escaped, comma-separated) fit in `maxBytes`; never an empty run. */
export function chunkByBytes(values: readonly string[], maxBytes: number = MAX_LIST_BYTES): string[][] {
  const chunks: string[][] = [];
  let chunk: string[] = [];
  let bytes = 0;
  for (const value of values) {
    const size = Buffer.byteLength(literal(value)) + 2; // and ", "
    if (chunk.length > 0 && bytes + size > maxBytes) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(value);
    bytes += size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/** `(v1, v2, …)`: the values as a list of literals, for `IN`. */
export function literalList(values: readonly string[]): string {
  return `(${values.map(literal).join(", ")})`;
}
