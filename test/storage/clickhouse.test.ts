import { expect, test } from "bun:test";
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
