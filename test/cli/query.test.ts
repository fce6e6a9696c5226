import { describe, expect, test } from "bun:test";
import { processEnv, runCommand, startProcess } from "../helpers/process";

// `ingest query`, as a user runs it from a shell: against a running service's query port, or on the data
// directory itself once no service holds it.

const embedded = !process.env.CLICKHOUSE_URL;
const KEY = "key-1";

/** Runs `ingest query` (from source) with `env`, standard input `stdin`, and returns what it printed. */
const ingestQuery = (args: string[], env: Record<string, string>, stdin = "") =>
  runCommand(["query", ...args], env, stdin);

async function ingest(url: string, events: object[]): Promise<void> {
  const response = await fetch(`${url}/batch/`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ api_key: KEY, batch: events }),
  });
  expect(response.status).toBe(200);
}

const EVENTS = [
  { event: "$pageview", distinct_id: "user-1" },
  { event: "$pageview", distinct_id: "user-2" },
  { event: "signed_up", distinct_id: "user-1" },
];
const SQL = "SELECT event, count() AS n FROM events GROUP BY event ORDER BY event";

describe.skipIf(!embedded)("ingest query", () => {
  test("asks a running service's query port: TabSeparated when piped, --format, --database, SQL on stdin", async () => {
    const env = processEnv({ PUBLIC_API_KEYS: KEY, QUERY_PORT: "0", QUERY_PASSWORD: "pw" });
    const service = await startProcess(env);
    try {
      await ingest(service.url, EVENTS);
      const client = { PATH: env.PATH!, QUERY_URL: service.started.query!, QUERY_PASSWORD: "pw" };
      expect(await ingestQuery([SQL], client)).toEqual({ stdout: "$pageview\t2\nsigned_up\t1\n", stderr: "", code: 0 });
      const json = await ingestQuery(["--format", "JSONEachRow", SQL], client);
      expect(json.stdout).toBe('{"event":"$pageview","n":2}\n{"event":"signed_up","n":1}\n');
      const database = env.CLICKHOUSE_DATABASE!;
      expect((await ingestQuery(["--database", database, "SELECT currentDatabase()"], client)).stdout).toBe(
        `${database}\n`,
      );
      // the port reaches the service's database only
      expect((await ingestQuery(["--database", "system", "SELECT 1"], client)).stderr).toContain("(ACCESS_DENIED)");
      expect((await ingestQuery([], client, "SELECT 40 + 2")).stdout).toBe("42\n");
      // its errors are the port's, on stderr, with a non-zero exit
      const refused = await ingestQuery(["DROP TABLE events"], client);
      expect([refused.code, refused.stdout]).toEqual([1, ""]);
      expect(refused.stderr).toContain("(READONLY)");
      const wrong = await ingestQuery([SQL], { ...client, QUERY_PASSWORD: "nope" });
      expect([wrong.code, wrong.stderr]).toEqual([1, expect.stringContaining("AUTHENTICATION_FAILED")]);
    } finally {
      service.child.kill("SIGTERM");
      await service.child.exited;
    }
  });

  test("with no service, it opens the data directory itself, read-only; while one holds it, it says how to ask it", async () => {
    const env = processEnv({ PUBLIC_API_KEYS: KEY });
    const service = await startProcess(env);
    const client = { PATH: env.PATH!, DATA_DIR: env.DATA_DIR!, CLICKHOUSE_DATABASE: env.CLICKHOUSE_DATABASE! };
    try {
      await ingest(service.url, EVENTS);
      const held = await ingestQuery([SQL], client);
      expect(held.code).toBe(1);
      expect(held.stderr).toContain(`A running service (process ${service.child.pid}) holds ${env.DATA_DIR}`);
      expect(held.stderr).toContain("QUERY_PORT");
    } finally {
      service.child.kill("SIGTERM");
      await service.child.exited;
    }
    expect(await ingestQuery([SQL], client)).toEqual({ stdout: "$pageview\t2\nsigned_up\t1\n", stderr: "", code: 0 });
    // read-only: the data is not touched
    const refused = await ingestQuery(["TRUNCATE TABLE events"], client);
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining("(READONLY)")]);
    expect((await ingestQuery(["SELECT count() FROM events"], client)).stdout).toBe("3\n");
    // a QUERY_PORT nobody answers on falls back to the data directory
    expect((await ingestQuery(["SELECT count() FROM events"], { ...client, QUERY_PORT: "1" })).stdout).toBe("3\n");
  });

  test("a directory with no data, a missing query and unknown options are refused with a sentence", async () => {
    const env = { PATH: process.env.PATH ?? "", DATA_DIR: "/nonexistent/ingest-data" };
    const missing = await ingestQuery(["SELECT 1"], env);
    expect([missing.code, missing.stderr]).toEqual([1, expect.stringContaining("No data in /nonexistent/ingest-data")]);
    const none = await ingestQuery([], env);
    expect([none.code, none.stderr]).toEqual([2, expect.stringContaining("No query given.")]);
    const unknown = await ingestQuery(["--bogus"], env);
    expect([unknown.code, unknown.stdout]).toEqual([2, ""]);
    expect(unknown.stderr).toContain("--bogus");
    expect(unknown.stderr).toContain("Usage: ingest query");
    const help = await ingestQuery(["--help"], env);
    expect([help.code, help.stdout]).toEqual([0, expect.stringContaining("Usage: ingest query")]);
  });
});
