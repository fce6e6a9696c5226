import { expect, test } from "bun:test";
import { statfsSync } from "node:fs";
import { logEntries, processEnv, startProcess } from "../helpers/process";

const KEY = "secret-api-key-do-not-log";
const MARKER = "payload-marker-never-logged";

/** Prometheus text → { "name{labels}": value }. */
function parseMetrics(text: string): Record<string, number> {
  const values: Record<string, number> = {};
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    values[line.slice(0, at)] = Number(line.slice(at + 1));
  }
  return values;
}

test("the service logs JSON lines and serves Prometheus metrics on METRICS_PORT, after real requests", async () => {
  const env = processEnv({
    PUBLIC_API_KEYS: KEY,
    METRICS_PORT: "0",
    LOG_LEVEL: "info",
    CLICKHOUSE_PASSWORD: "pw-secret",
  });
  const service = await startProcess(env);
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${service.url}/batch/`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });
  try {
    const batch = (n: number) =>
      JSON.stringify({
        api_key: KEY,
        batch: Array.from({ length: n }, (_, i) => ({ event: MARKER, distinct_id: `u${i}` })),
      });
    expect((await post(batch(3))).status).toBe(200);
    expect((await post(batch(2))).status).toBe(200);
    expect(
      (await post(JSON.stringify({ api_key: "wrong", batch: [{ event: MARKER, distinct_id: "x" }] }))).status,
    ).toBe(401);
    expect((await post(`{"batch": [${MARKER}`)).status).toBe(400);
    expect((await post(batch(1), { "content-type": "text/plain" })).status).toBe(415);
    expect((await fetch(`${service.url}/health`)).status).toBe(200);

    const scraped = await fetch(service.started.metrics!);
    expect(scraped.headers.get("content-type")).toContain("text/plain");
    const metrics = parseMetrics(await scraped.text());
    expect(metrics).toMatchObject({
      'ingest_requests_total{route="batch",status="200"}': 2,
      'ingest_requests_total{route="batch",status="401"}': 1,
      'ingest_requests_total{route="batch",status="400"}': 1,
      'ingest_requests_total{route="batch",status="415"}': 1,
      'ingest_requests_total{route="health",status="200"}': 1,
      ingest_events_ingested_total: 5,
      ingest_events_dropped_total: 0,
      ingest_batch_events_count: 2,
      ingest_batch_events_sum: 5,
      ingest_insert_errors_total: 0,
      ingest_queue_events: 0,
      ingest_pending_bytes: 0, // every request answered, so every claim released
    });
    expect(metrics.ingest_flush_events_sum).toBe(5);
    for (const table of ["events", "persons", "person_distinct_ids"]) {
      // sessions has none: these events have no $session_id
      expect(metrics[`ingest_clickhouse_active_parts{table="${table}"}`]).toBeGreaterThanOrEqual(1);
      expect(metrics[`ingest_clickhouse_table_bytes{table="${table}"}`]).toBeGreaterThan(0);
    }
    // the data directory's file system, as the operating system reports it
    const fs = statfsSync(env.DATA_DIR!);
    expect(metrics.ingest_clickhouse_disk_total_bytes).toBe(fs.blocks * fs.bsize);
    expect(metrics.ingest_clickhouse_disk_free_bytes).toBeGreaterThan(0);
    expect(metrics.ingest_clickhouse_disk_free_bytes).toBeLessThanOrEqual(fs.blocks * fs.bsize);
    expect(metrics.ingest_flush_duration_seconds_count).toBeGreaterThanOrEqual(1);
    for (const phase of ["identity", "persons", "links", "events"]) {
      expect(metrics[`ingest_flush_phase_seconds_count{phase="${phase}"}`]).toBe(
        metrics.ingest_flush_duration_seconds_count,
      );
    }
    const linkLookups = ["hit", "miss"].map(
      (result) => metrics[`ingest_identity_cache_lookups_total{kind="links",result="${result}"}`] ?? 0,
    );
    expect(linkLookups[0]! + linkLookups[1]!).toBeGreaterThanOrEqual(1);
    expect(metrics.process_resident_memory_bytes).toBeGreaterThan(10_000_000);
    // the public port keeps its two endpoints
    expect((await fetch(`${service.url}/metrics`)).status).toBe(404);
  } finally {
    service.child.kill("SIGTERM");
  }
  expect(await service.child.exited).toBe(0);

  const output = service.output();
  const lines = output.split("\n").filter((line) => line !== "");
  const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>); // every line is JSON
  for (const entry of entries) expect(entry).toMatchObject({ time: expect.any(String), level: expect.any(String) });
  const byMsg = (msg: string) => entries.filter((entry) => entry.msg === msg);

  expect(byMsg("started")[0]).toMatchObject({
    config: { publicApiKeys: 1, logLevel: "info", maxEventsPerBatch: 10_000 },
  });
  expect(byMsg("request refused").map(({ status, code, bytes }) => ({ status, code, bytes }))).toEqual([
    { status: 401, code: "invalid_api_key", bytes: expect.any(Number) },
    { status: 400, code: "invalid_payload", bytes: expect.any(Number) },
    { status: 415, code: "unsupported_content_type", bytes: expect.any(Number) },
    { status: 404, code: "not_found", bytes: undefined }, // GET /metrics on the public port
  ]);
  expect(byMsg("request refused")[0]).toMatchObject({ reason: "Invalid api_key", method: "POST", path: "/batch/" });
  expect(byMsg("shutting down")).toHaveLength(1);
  expect(byMsg("stopped")).toHaveLength(1);
  // never a payload, an api key or a password
  expect(output).not.toContain(MARKER);
  expect(output).not.toContain(KEY);
  expect(output).not.toContain("pw-secret");
}, 30_000);

test("a restarted service fills its identity caches from the tables, and says whether every link fit", async () => {
  const env = processEnv({ PUBLIC_API_KEYS: KEY, LOG_LEVEL: "info" });
  const run = async (extra: Record<string, string>, batch: object[] = []) => {
    const service = await startProcess({ ...env, ...extra });
    try {
      // answered once startup has finished, signal handlers included
      expect((await fetch(`${service.url}/health`)).status).toBe(200);
      if (batch.length > 0) {
        const body = JSON.stringify({ api_key: KEY, batch });
        const answer = await fetch(`${service.url}/batch/`, {
          method: "POST",
          body,
          headers: { "content-type": "application/json" },
        });
        expect(answer.status).toBe(200);
      }
    } finally {
      service.child.kill("SIGTERM");
    }
    expect(await service.child.exited).toBe(0);
    return logEntries(service.output()).find((entry) => entry.msg === "identity cache preloaded");
  };
  const ids = ["p-1", "p-2", "p-3"];
  expect(
    await run(
      {},
      ids.map((id) => ({ event: "e", distinct_id: id })),
    ),
  ).toBeUndefined(); // nothing stored yet
  const embedded = !process.env.CLICKHOUSE_URL; // a server's instances may share it: they preload nothing
  expect(await run({})).toEqual(embedded ? expect.objectContaining({ links: 3, complete: true }) : undefined);
  expect(await run({ LINK_CACHE_ENTRIES: "2" })).toEqual(
    embedded ? expect.objectContaining({ links: 3, complete: false }) : undefined,
  );
}, 30_000);

test.skipIf(Boolean(process.env.CLICKHOUSE_URL))(
  "the query port: a log line per query without its text or result, and its metrics by outcome",
  async () => {
    const env = processEnv({ METRICS_PORT: "0", QUERY_PORT: "0", QUERY_PASSWORD: "query-pw-secret" });
    const service = await startProcess(env);
    const query = (sql: string, password = "query-pw-secret") =>
      fetch(service.started.query!, {
        method: "POST",
        body: sql,
        headers: { authorization: `Basic ${btoa(`default:${password}`)}` },
      }).then((response) => response.text());
    try {
      expect(await query(`SELECT '${MARKER}', number FROM numbers(3)`)).toContain(MARKER);
      await query(`SELECT '${MARKER}' FROM no_such_table`);
      await query(`SELECT file('/etc/${MARKER}')`);
      await query("SELECT 1", "wrong-password");
      const metrics = parseMetrics(await (await fetch(service.started.metrics!)).text());
      expect(metrics).toMatchObject({
        'ingest_queries_total{outcome="ok"}': 1,
        'ingest_queries_total{outcome="failed"}': 1,
        'ingest_queries_total{outcome="refused"}': 1,
        'ingest_queries_total{outcome="unauthenticated"}': 1,
        ingest_query_duration_seconds_count: 4,
        ingest_query_result_rows_total: 3,
        ingest_queries_running: 0,
      });
    } finally {
      service.child.kill("SIGTERM");
    }
    expect(await service.child.exited).toBe(0);
    const queries = logEntries(service.output()).filter((entry) => String(entry.msg).startsWith("query"));
    expect(
      queries.map(({ level, msg, outcome, error, resultRows }) => ({ level, msg, outcome, error, resultRows })),
    ).toEqual([
      { level: "info", msg: "query", outcome: "ok", error: undefined, resultRows: 3 },
      { level: "info", msg: "query", outcome: "failed", error: "UNKNOWN_TABLE", resultRows: 0 },
      { level: "info", msg: "query", outcome: "refused", error: "ACCESS_DENIED", resultRows: 0 },
      {
        level: "warn",
        msg: "query refused: authentication failed",
        outcome: "unauthenticated",
        error: "AUTHENTICATION_FAILED",
        resultRows: 0,
      },
    ]);
    for (const entry of queries)
      expect(entry).toMatchObject({ user: "default", seconds: expect.any(Number), queryId: expect.any(String) });
    expect(service.output()).not.toContain(MARKER); // neither the query's text nor its result
    expect(service.output()).not.toContain("query-pw-secret");
  },
  30_000,
);

test("a disk with less free than DISK_WARN_PERCENT is logged as a warning at startup, once", async () => {
  // every disk has less than 100% free
  const service = await startProcess(processEnv({ DISK_WARN_PERCENT: "100", LOG_LEVEL: "info" }));
  try {
    expect((await fetch(`${service.url}/health`)).status).toBe(200);
    for (let waited = 0; !service.output().includes("disk nearly full") && waited < 5_000; waited += 50)
      await Bun.sleep(50);
  } finally {
    service.child.kill("SIGTERM");
  }
  expect(await service.child.exited).toBe(0);
  const warnings = logEntries(service.output()).filter(
    (entry) => entry.msg === "disk nearly full: ingest stops when it is",
  );
  expect(warnings).toEqual([
    expect.objectContaining({
      level: "warn",
      disk: "default",
      freePercent: expect.any(Number),
      totalBytes: expect.any(Number),
    }),
  ]);
});
