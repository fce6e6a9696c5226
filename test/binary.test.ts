import { beforeAll, expect, test } from "bun:test";
import { copyFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { environOf, queryRows, ROOT, rssMiB, startProcess } from "./helpers/process";
import { scratchDir } from "./helpers/scratch";
import { uniqueDatabase } from "./helpers/service";
import { standInClickHouse } from "./helpers/stand-in-clickhouse";

// The single executable, as an operator gets it: `npm run build`, copied alone into an empty directory, run with
// an environment that has no PATH (so no node and no bun), on the embedded engine and against a ClickHouse server.

const KEY = "binary-key";
let binary: string;

beforeAll(() => {
  const build = Bun.spawnSync(["npm", "run", "build", "--silent"], { cwd: ROOT, stderr: "pipe", stdout: "pipe" });
  if (build.exitCode !== 0) throw new Error(`npm run build failed: ${build.stderr}`);
  console.log(`binary: ${build.stdout.toString().trim()}`);
  binary = join(scratchDir("ingest-binary-"), "ingest");
  copyFileSync(join(ROOT, "dist", "ingest"), binary);
}, 120_000);

/** Runs the copied binary with exactly `env` (no PATH), from its own directory; times it to a healthy /health. */
async function run(env: Record<string, string>) {
  const started = performance.now();
  const service = await startProcess(
    { HOST: "127.0.0.1", PORT: "0", PUBLIC_API_KEYS: KEY, ...env },
    [binary],
    join(binary, ".."),
  );
  expect((await fetch(`${service.url}/health`)).ok).toBe(true);
  return { ...service, seconds: (performance.now() - started) / 1000 };
}

const ingest = (url: string, event: string) =>
  fetch(`${url}/batch/`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ api_key: KEY, batch: [{ event, distinct_id: "binary-user" }] }),
  }).then(async (response) => ({ status: response.status, body: await response.json() }));

test("--help lists every setting with its default, --version prints the version, with no PATH", () => {
  const help = Bun.spawnSync([binary, "--help"], { env: {} });
  expect(help.exitCode).toBe(0);
  expect(help.stdout.toString()).toContain("CHDB_CACHE_DIR");
  expect(help.stdout.toString()).toContain("(default: 8000)");
  expect(Bun.spawnSync([binary, "--version"], { env: {} }).stdout.toString().trim()).toBe(pkg.version);
});

test("on the embedded engine: first start unpacks it once, later starts reuse it; ingests; SIGTERM; rows on disk", async () => {
  const env = { DATA_DIR: scratchDir("ingest-binary-data-"), CHDB_CACHE_DIR: scratchDir("ingest-binary-cache-") };
  const database = uniqueDatabase();
  const first = await run({ ...env, CLICKHOUSE_DATABASE: database, METRICS_PORT: "0" });
  expect(await ingest(first.url, "from_binary")).toEqual({
    status: 200,
    body: { status: "ok", ingested: 1, dropped: 0 },
  });
  // prom-client works inside the executable too
  expect(await (await fetch(first.started.metrics!)).text()).toContain("ingest_events_ingested_total 1");
  const firstRss = Math.round(rssMiB(first.child.pid));
  expect(environOf(first.child.pid).MIMALLOC_PURGE_DELAY).toBe("-1"); // started again in its own place, as from source
  first.child.kill("SIGTERM");
  expect(await first.child.exited).toBe(0);

  // the query port and `ingest query` run inside the executable too
  const warm = await run({ ...env, CLICKHOUSE_DATABASE: database, QUERY_PORT: "0", QUERY_PASSWORD: "pw" });
  const warmRss = Math.round(rssMiB(warm.child.pid));
  const asked = Bun.spawnSync([binary, "query", "SELECT event FROM events"], {
    env: { QUERY_URL: warm.started.query!, QUERY_PASSWORD: "pw", CLICKHOUSE_DATABASE: database },
  });
  expect([asked.exitCode, asked.stdout.toString()]).toEqual([0, "from_binary\n"]);
  warm.child.kill("SIGTERM");
  expect(await warm.child.exited).toBe(0);
  console.log(
    `binary: first start ${first.seconds.toFixed(2)} s to a healthy /health (unpacking the engine), ` +
      `warm start ${warm.seconds.toFixed(2)} s; RSS ${firstRss} MiB after a batch, ${warmRss} MiB idle`,
  );
  expect(readdirSync(env.CHDB_CACHE_DIR)).toHaveLength(1); // unpacked once, reused
  // `ingest import` runs inside the executable too: a Mixpanel line on standard input, recognised as one
  const line = { event: "from_import", properties: { time: 1714557600, distinct_id: "u-1", $insert_id: "i-1" } };
  const imported = Bun.spawnSync([binary, "import"], {
    env: { ...env, CLICKHOUSE_DATABASE: database },
    stdin: Buffer.from(`${JSON.stringify(line)}\n`),
  });
  expect([imported.exitCode, imported.stderr.toString()]).toEqual([0, ""]);
  expect(JSON.parse(imported.stdout.toString())).toMatchObject({ formats: { stdin: "mixpanel" }, imported: 1 });
  const opened = Bun.spawnSync([binary, "query", "SELECT count() FROM events"], {
    env: { ...env, CLICKHOUSE_DATABASE: database },
  });
  expect([opened.exitCode, opened.stdout.toString()]).toEqual([0, "2\n"]); // the data directory, opened directly

  const rows = await queryRows<{ event: string }>(
    { ...env, CLICKHOUSE_DATABASE: database, PATH: process.env.PATH ?? "" },
    "SELECT event FROM {db}.events ORDER BY event",
  );
  expect(rows).toEqual([{ event: "from_binary" }, { event: "from_import" }]);
}, 120_000);

test("with CLICKHOUSE_URL: ingests through the server and never loads (or unpacks) chDB", async () => {
  const clickhouse = standInClickHouse();
  try {
    const cache = scratchDir("ingest-binary-unused-cache-");
    const service = await run({ CLICKHOUSE_URL: clickhouse.url, CHDB_CACHE_DIR: cache });
    expect(await ingest(service.url, "via_server")).toEqual({
      status: 200,
      body: { status: "ok", ingested: 1, dropped: 0 },
    });
    service.child.kill("SIGTERM");
    expect(await service.child.exited).toBe(0);
    const statements = clickhouse.recorded.map((r) => r.statement.split(/\s+/).slice(0, 3).join(" "));
    expect(statements).toContain("INSERT INTO `default`.`events`");
    expect(readdirSync(cache)).toEqual([]); // chDB was never loaded
  } finally {
    await clickhouse.stop();
  }
}, 60_000);
