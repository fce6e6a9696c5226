import { describe, expect, test } from "bun:test";
import { processEnv, queryRows, startProcess } from "../helpers/process";
import { scratchDir } from "../helpers/scratch";

// The embedded engine's start (src/engine/open.ts), each in processes of their own: chDB binds one data
// directory per process, and what is tested is what a restart finds on disk.

const embedded = !process.env.CLICKHOUSE_URL;
const KEY = "key-1";

async function ingestOnce(env: Record<string, string>, distinctId: string): Promise<void> {
  const service = await startProcess(env);
  try {
    const response = await fetch(`${service.url}/batch/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ api_key: KEY, batch: [{ event: "e", distinct_id: distinctId }] }),
    });
    expect(response.status).toBe(200);
  } finally {
    service.child.kill("SIGTERM");
    expect(await service.child.exited).toBe(0);
  }
}

describe.skipIf(!embedded)("the embedded engine's start", () => {
  test("a service restarted on its data directory starts again and keeps what it stored, with the query port too", async () => {
    const env = processEnv({ PUBLIC_API_KEYS: KEY, CLICKHOUSE_DATABASE: "default" });
    await ingestOnce(env, "first");
    await ingestOnce(env, "second");
    await ingestOnce({ ...env, QUERY_PORT: "0", QUERY_PASSWORD: "pw", QUERY_READONLY: "0" }, "third");
    await ingestOnce({ ...env, QUERY_PORT: "0", QUERY_PASSWORD: "pw" }, "fourth");
    const rows = await queryRows<{ distinct_id: string }>(
      env,
      "SELECT distinct_id FROM {db}.events ORDER BY timestamp",
    );
    expect(rows.map((row) => row.distinct_id)).toEqual(["first", "second", "third", "fourth"]);
  }, 60_000);

  test("a data directory whose `default` was the engine's Overlay keeps its tables", async () => {
    // as the service before the Overlay was renamed left it: chDB's own default database, tables in it
    const dataDir = scratchDir("ingest-overlay-");
    const made = Bun.spawnSync(
      [
        process.execPath,
        "-e",
        `const { Session } = require("chdb"); const s = new Session(${JSON.stringify(dataDir)});
         await s.queryAsync("CREATE TABLE default.kept (n UInt8) ENGINE = MergeTree ORDER BY n");
         await s.queryAsync("INSERT INTO default.kept VALUES (1), (2), (3)"); s.close();`,
      ],
      { cwd: `${import.meta.dir}/../../..`, stderr: "pipe" },
    );
    expect([made.exitCode, made.stderr.toString()]).toEqual([0, ""]);
    const env = processEnv({ DATA_DIR: dataDir, CLICKHOUSE_DATABASE: "default" });
    for (let start = 0; start < 2; start++) {
      expect(await queryRows<{ n: number }>(env, "SELECT count() AS n FROM {db}.kept")).toEqual([{ n: 3 }]);
    }
  }, 60_000);
});
