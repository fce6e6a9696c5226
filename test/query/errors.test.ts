import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CODES } from "../../src/query/errors";
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
