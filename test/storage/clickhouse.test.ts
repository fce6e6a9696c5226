import { expect, test } from "bun:test";
import { parseJson } from "../../src/contract";
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
