import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Session } from "chdb";
import { openEmbeddedEngine } from "../../src/engine";
import { queryEngineOptions } from "../../src/query";
import { type LoggedQuery, QUERY_LOG_ROWS, QUERY_LOG_TABLE, QueryLog } from "../../src/query/log";
import { startService, type TestService } from "../helpers/service";

// The port's system.query_log is a Memory table of its own: bounded, so that a busy port's log never grows with
// its queries. (What a row says of a query, through the port: http.test.ts and security.test.ts.)

const embedded = !process.env.CLICKHOUSE_URL; // the port serves the embedded engine only

describe.skipIf(!embedded)("the port's query log", () => {
  let service: TestService;
  let session: Session;
  let table: string;
  beforeAll(async () => {
    service = await startService({ QUERY_PORT: "0" });
    const { dataDir, nativeCacheDir, database } = queryEngineOptions(service.config);
    const Session = await openEmbeddedEngine(dataDir, nativeCacheDir);
    session = new Session(dataDir);
    table = `\`${database}\`.query_log`; // a log of the test's own, in the form of the port's
    await session.queryAsync(QUERY_LOG_TABLE.replace("{database}", `\`${database}\``));
  });
  afterAll(async () => {
    session?.close();
    await service?.stop();
  });

  const query = (queryId: string): LoggedQuery => ({
    queryId,
    user: "default",
    text: "SELECT 1",
    statement: "SelectWithUnionQuery",
    database: "default",
    startedAt: new Date(),
    seconds: 0.001,
    resultRows: 1,
    resultBytes: 2,
    writtenRows: 0,
    error: undefined,
    method: "POST",
  });

  test("keeps the last QUERY_LOG_ROWS or so rows: past them, the oldest flushes are dropped", async () => {
    const log = new QueryLog(session, table);
    // three flushes of 0.4 × QUERY_LOG_ROWS rows (a start and a finish row a query): 1.2 × QUERY_LOG_ROWS in all
    const perFlush = (0.4 * QUERY_LOG_ROWS) / 2;
    for (const flush of [0, 1, 2]) {
      for (let n = 0; n < perFlush; n++) log.record(query(`q-${flush}-${n}`));
      await log.flush();
    }
    const count = async (where: string) =>
      Number((await session.queryAsync(`SELECT count() FROM ${table} WHERE ${where}`, { format: "TSVRaw" })).text());
    expect(await count("1")).toBeLessThanOrEqual(QUERY_LOG_ROWS);
    expect(await count("startsWith(query_id, 'q-0-')")).toBe(0); // the oldest flush is gone
    expect(await count("startsWith(query_id, 'q-2-')")).toBe(2 * perFlush); // the newest is whole
  });
});
