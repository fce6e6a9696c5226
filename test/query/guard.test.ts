import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { send, startService, type TestService } from "../helpers/service";

// What a port user with writes allowed (QUERY_READONLY=0) can do to the service itself: nothing that runs later
// without a client, outside the port's limits, and nothing that makes POST /batch/ fail for good. Each attack is
// checked for the port's answer and for the service afterwards: the count of events, and /batch/ still 200.

const embedded = !process.env.CLICKHOUSE_URL;
const KEY = "key-1";

describe.skipIf(!embedded)("a writable port and the ingest path", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ PUBLIC_API_KEYS: KEY, QUERY_PORT: "0", QUERY_READONLY: "0" });
  });
  afterAll(() => service.stop());

  const post = (sql: string, search = "") => service.query!.fetch(`/${search}`, { method: "POST", body: sql });
  const batch = (event: string) => send(service, { api_key: KEY, batch: [{ event, distinct_id: "user-1" }] });

  test("a write the database refuses leaves nothing running: the port's next query is not held up", async () => {
    // an operator's own client, past the port (which refuses this): the table refuses every row
    await service.db.command(`ALTER TABLE ${service.db.table("events")} ADD CONSTRAINT refuse CHECK 0`);
    try {
      expect((await batch("refused")).status).toBeGreaterThanOrEqual(500);
      const started = performance.now();
      const response = await post("SELECT 1");
      expect([response.status, await response.text()]).toEqual([200, "1\n"]);
      // a failed insert that chDB keeps listed held every query of the port about a second at each step: 5 s
      expect(performance.now() - started).toBeLessThan(1000);
      const listed = await service.db.rows<{ query: string }>(
        "SELECT query FROM system.processes WHERE query LIKE 'INSERT%'",
      );
      expect(listed).toEqual([]);
    } finally {
      await service.db.command(`ALTER TABLE ${service.db.table("events")} DROP CONSTRAINT refuse`);
    }
    expect((await batch("after")).status).toBe(200);
  });
});
