import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CODES, QueryError } from "../../src/query/errors";
import type { ClickHouse } from "../../src/storage";
import { openDb, uniqueDatabase } from "../helpers/service";

// The error codes the port raises itself are ClickHouse's own: the engine names each one as the port does.

describe("the port's own error codes", () => {
  let db: ClickHouse;
  beforeAll(async () => {
    db = await openDb(uniqueDatabase());
  });
  afterAll(() => db.close());

  test("each code is the engine's number for its name", async () => {
    const rows = await db.rows<{ code: number; name: string }>(
      `SELECT code, errorCodeToName(code) AS name FROM (SELECT arrayJoin([${Object.values(CODES).join(", ")}]) AS code)`,
    );
    const named = Object.fromEntries(rows.map((row) => [row.name, row.code]));
    expect(named).toEqual({ ...CODES });
  });
});

describe("the port's own failures", () => {
  test("a failure of the port itself is UNKNOWN_EXCEPTION (1002), 500, in ClickHouse's form; the engine's errors keep their own code", () => {
    const own = QueryError.fromEngine(new TypeError("undefined is not an object"));
    expect([own.code, own.type, own.status, own.text]).toEqual([
      1002,
      "UNKNOWN_EXCEPTION",
      500,
      "Code: 1002. DB::Exception: undefined is not an object. (UNKNOWN_EXCEPTION)",
    ]);
    const engine = QueryError.fromEngine(new Error("Code: 60. DB::Exception: Unknown table x. (UNKNOWN_TABLE)"));
    expect([engine.code, engine.type, engine.status]).toEqual([60, "UNKNOWN_TABLE", 404]);
  });
});
