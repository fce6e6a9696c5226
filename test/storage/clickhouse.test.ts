import { expect, test } from "bun:test";
import { LIMITS, type Properties, parseJson } from "../../src/contract";
import { isDataError } from "../../src/storage/clickhouse";
import { openDb, uniqueDatabase } from "../helpers/service";

test("a write refused for its data may be one request's fault; the database's own condition is everyone's", () => {
  const clickhouse = (type: string) => Object.assign(new Error(type), { type, code: "27" });
  expect(isDataError(clickhouse("CANNOT_PARSE_ESCAPE_SEQUENCE"))).toBe(true);
  expect(isDataError(clickhouse("CANNOT_PARSE_INPUT_ASSERTION_FAILED"))).toBe(true);
  expect(isDataError(new RangeError("Maximum call stack size exceeded."))).toBe(true);
  expect(isDataError(clickhouse("NOT_ENOUGH_SPACE"))).toBe(false);
  expect(isDataError(clickhouse("UNKNOWN_TABLE"))).toBe(false);
  expect(isDataError(clickhouse("MEMORY_LIMIT_EXCEEDED"))).toBe(false);
  expect(isDataError(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:8123"), { code: "ECONNREFUSED" }))).toBe(
    false,
  );
  expect(isDataError(new Error("Timeout error."))).toBe(false);
});

test("an insert leaves collapsing rows by key to merges and reads, on either backend", async () => {
  const db = await openDb(uniqueDatabase());
  try {
    await db.command(`CREATE DATABASE \`${db.database}\``);
    await db.command(
      `CREATE TABLE ${db.table("versions")} (key String, version UInt32) ENGINE = ReplacingMergeTree(version) ORDER BY key`,
    );
    await db.insert("versions", [
      { key: "a", version: 1 },
      { key: "a", version: 2 },
    ]);
    // Collapsed on insert (`optimize_on_insert`, ClickHouse's default), one row would remain before any merge.
    expect(await db.rows(`SELECT key, version FROM ${db.table("versions")} ORDER BY version`)).toEqual([
      { key: "a", version: 1 },
      { key: "a", version: 2 },
    ]);
    expect(await db.rows(`SELECT key, version FROM ${db.table("versions")} FINAL`)).toEqual([{ key: "a", version: 2 }]);
  } finally {
    await db.command(`DROP DATABASE IF EXISTS \`${db.database}\``);
    await db.close();
  }
});

test("an object given for a String column is stored as its JSON text, exactly as JSON.stringify writes it", async () => {
  const db = await openDb(uniqueDatabase());
  try {
    await db.command(`CREATE DATABASE \`${db.database}\``);
    await db.command(`CREATE TABLE ${db.table("texts")} (key String, value String) ENGINE = MergeTree ORDER BY key`);
    const objects: Record<string, unknown>[] = [
      {},
      { quote: 'a "b" }{ ][ ,', backslash: "c:\\d\\", newline: "1\n2\t3\r", nul: "\u0000" },
      { separators: "\u2028\u2029", accents: "é ü 中文", emoji: "😀", lone: "\ud800 \udfff" },
      { nested: [1, [2, { deep: [null, true, false] }], { "": "" }], 'key "quoted"': -0.5e-7 },
      { big: JSON.parse('{"n":12345678901234567890}').n, precise: 0.1 + 0.2, raw: parseJsonKeepingDigits() },
    ];
    await db.insert(
      "texts",
      objects.map((value, index) => ({ key: `k${index}`, value })),
    );
    // a string of JSON stays the string it is
    await db.insert("texts", [{ key: "s", value: '{"a": 1}' }]);
    const stored = await db.rows<{ key: string; value: string }>(
      `SELECT key, value FROM ${db.table("texts")} ORDER BY key`,
    );
    expect(stored).toEqual([
      ...objects.map((value, index) => ({ key: `k${index}`, value: JSON.stringify(value) })),
      { key: "s", value: '{"a": 1}' },
    ]);
  } finally {
    await db.command(`DROP DATABASE IF EXISTS \`${db.database}\``);
    await db.close();
  }
});

/** A number kept as its digits (contract/json.ts), as an event's properties hold one a double cannot. */
function parseJsonKeepingDigits(): unknown {
  return (parseJson('{"id": 98765432109876543210}') as { id: unknown }).id;
}

test("rows whose objects hold text like the end of a row stay their rows, each stored as JSON.stringify writes it", async () => {
  // From a differential run of hostile batches against the insert before and after objects went in whole: strings and
  // keys that close a row and open another, every control character, escapes the engine's object scan must step over
  // (a trailing backslash, `\"`), numbers kept as sent, and nesting at the service's limit, many rows in one insert.
  const db = await openDb(uniqueDatabase());
  try {
    await db.command(`CREATE DATABASE \`${db.database}\``);
    await db.command(
      `CREATE TABLE ${db.table("rows")} (key UInt32, value String, after String) ENGINE = MergeTree ORDER BY key`,
    );
    const texts = [
      '"],["x"',
      '"]\n["x",',
      '}]},{"a":',
      "]\r\n[",
      "a\\",
      '\\"',
      '"\\',
      "{{",
      "}}}",
      "\\u0000",
      ...Array.from({ length: 32 }, (_, code) => String.fromCharCode(code)),
      "\u2028\u2029\ud800\udc00\ud83d",
    ];
    let deep: unknown = texts[0];
    for (let level = 0; level < LIMITS.propertiesDepth - 1; level++) deep = level % 2 ? [deep] : { [texts[1]!]: deep };
    const objects: Record<string, unknown>[] = [
      ...texts.map((text) => ({ [text]: text, list: [text, { [text]: [text] }], after: text })),
      { deep },
      parseJson('{"n":12345678901234567890,"z":-0,"e":1e400,"a":[0.30000000000000004,1e21]}') as Properties,
    ];
    await db.insert(
      "rows",
      objects.map((value, key) => ({ key, value, after: `"],[${key}` })),
    );
    const stored = await db.rows<{ key: number; value: string; after: string }>(
      `SELECT key, value, after FROM ${db.table("rows")} ORDER BY key`,
    );
    expect(stored).toEqual(objects.map((value, key) => ({ key, value: JSON.stringify(value), after: `"],[${key}` })));
  } finally {
    await db.command(`DROP DATABASE IF EXISTS \`${db.database}\``);
    await db.close();
  }
});
