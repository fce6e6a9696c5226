import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config";
import { ClickHouse } from "../src/storage/clickhouse";
import { count } from "./helpers/rows";
import { clickhouseEnv, uniqueDatabase } from "./helpers/service";

const ROOT = join(import.meta.dir, "..");
const dataDirs: string[] = [];
afterAll(() => {
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

/** The service as an operator runs it, as its own process with its own embedded database (or the test server). */
function environment(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "", HOST: "127.0.0.1", PORT: "0", ...extra };
  if (process.env.CLICKHOUSE_URL) Object.assign(env, clickhouseEnv());
  else {
    const dataDir = mkdtempSync(join(tmpdir(), "ingest-main-"));
    dataDirs.push(dataDir);
    env.DATA_DIR = dataDir;
  }
  return env;
}

async function readUntil(stream: ReadableStream<Uint8Array>, pattern: RegExp): Promise<RegExpMatchArray> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of stream) {
    text += decoder.decode(chunk);
    const match = text.match(pattern);
    if (match) return match;
  }
  throw new Error(`output ended without ${pattern}: ${text}`);
}

describe("the service process", () => {
  test("starts, ingests, and shuts down cleanly on SIGTERM", async () => {
    const database = uniqueDatabase();
    const env = environment({ PUBLIC_API_KEYS: "key-1", CLICKHOUSE_DATABASE: database });
    const child = Bun.spawn([process.execPath, "src/main.ts"], { cwd: ROOT, env, stdout: "pipe", stderr: "inherit" });
    try {
      const [, url] = await readUntil(child.stdout, /Listening on (http:\/\/\S+?)\/? /);
      expect(await (await fetch(`${url}/health`)).json()).toEqual({ ok: true });
      const response = await fetch(`${url}/batch/`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-encoding": "gzip" },
        body: Bun.gzipSync(JSON.stringify({ api_key: "key-1", batch: [{ event: "from_process", distinct_id: "u" }] })),
      });
      expect(await response.json()).toEqual({ status: "ok", ingested: 1, dropped: 0 });
    } finally {
      child.kill("SIGTERM");
    }
    expect(await child.exited).toBe(0);

    // What it acknowledged is on disk: open the same data with a new storage.
    const db = ClickHouse.connect(loadConfig({ ...env, CLICKHOUSE_DATABASE: database }).clickhouse);
    try {
      expect(await count(db, "events", "event = 'from_process'")).toBe(1);
    } finally {
      await db.command(`DROP DATABASE IF EXISTS \`${database}\``);
      await db.close();
    }
  });

  test("a bad configuration exits non-zero with a message naming the variable", async () => {
    const child = Bun.spawn([process.execPath, "src/main.ts"], {
      cwd: ROOT,
      env: environment({ PORT: "not-a-port", MAX_EVENTS_PER_BATCH: "-1" }),
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await child.exited).toBe(2);
    const stderr = await new Response(child.stderr).text();
    expect(stderr).toContain("Invalid configuration");
    expect(stderr).toContain("PORT");
    expect(stderr).toContain("MAX_EVENTS_PER_BATCH");
  });
});
