import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startService, type TestService } from "../helpers/service";

// The engine's places (QUERY_CONCURRENCY) and the lifetime of a query's session: waiting, refusing, and freeing a
// place when a client goes away mid-result.

const embedded = !process.env.CLICKHOUSE_URL;
const SLOW = "SELECT sum(sleepEachRow(0.25)) FROM numbers(4)"; // a second, a row at a time

describe.skipIf(!embedded)("QUERY_CONCURRENCY", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ QUERY_PORT: "0", QUERY_CONCURRENCY: "1" }, { query: { queueWaitMs: 300 } });
  });
  afterAll(() => service.stop());
  const post = (sql: string) =>
    service.query!.fetch("/?max_block_size=1", { method: "POST", body: sql }).then(async (response) => ({
      status: response.status,
      code: response.headers.get("x-clickhouse-exception-code"),
      text: await response.text(),
    }));

  test("a query waits for a place, then is refused with TOO_MANY_SIMULTANEOUS_QUERIES; the next one runs", async () => {
    const running = post(SLOW);
    await Bun.sleep(100);
    expect(service.query!.engine.running).toBe(1);
    const refused = await post("SELECT 1");
    expect([refused.code, refused.text]).toEqual([
      "202",
      "Code: 202. DB::Exception: Too many simultaneous queries. Maximum: 1. (TOO_MANY_SIMULTANEOUS_QUERIES)\n",
    ]);
    expect((await running).text).toBe("0\n");
    expect(await post("SELECT 1")).toEqual({ status: 200, code: null, text: "1\n" });
    expect(service.query!.engine.running).toBe(0);
  });

  test("a query that waits less than the wait gets the place the running one frees", async () => {
    const first = post("SELECT sum(sleepEachRow(0.1)) FROM numbers(2)");
    await Bun.sleep(50);
    const second = await post("SELECT 2");
    expect([(await first).text, second.text]).toEqual(["0\n", "2\n"]);
  });

  test("a client that goes away mid-result cancels its query and frees its place", async () => {
    const controller = new AbortController();
    const response = await service.query!.fetch("/", {
      method: "POST",
      body: "SELECT number FROM numbers(100000000)",
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    await reader.read(); // the first chunk arrived: the query is streaming
    expect(service.query!.engine.running).toBe(1);
    controller.abort();
    for (let waited = 0; service.query!.engine.running > 0 && waited < 5_000; waited += 50) await Bun.sleep(50);
    expect(service.query!.engine.running).toBe(0);
    expect((await post("SELECT 3")).text).toBe("3\n");
    expect(service.query!.answers.at(-2)).toMatchObject({ outcome: "failed", status: 499 });
  });
});
