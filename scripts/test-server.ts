/**
 * `npm run test:server [paths…]`: the storage and identity tests in server mode, through `CLICKHOUSE_URL`, against
 * a real ClickHouse engine: the writable query port of a service run as its own process on a fresh data
 * directory. So the service's server-mode SQL (schema, reads, inserts) runs over the HTTP client against the
 * engine, as it does against a ClickHouse server. Prints bun test's own summary and exits with its status.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");
/** What runs in server mode by default: everything that writes or reads the tables. */
const SUITES = [
  "test/storage",
  "test/identity",
  "test/write",
  "test/engine",
  "test/capture/batch.test.ts",
  "test/docs.test.ts",
];
/** Files under SUITES that never reach the database: `bun test` has run them, and a server changes nothing in them. */
const NO_DATABASE = new Set([
  "test/identity/cache.test.ts",
  "test/identity/component.test.ts",
  "test/identity/person-rules.test.ts",
  "test/identity/simulation.test.ts",
  "test/storage/backup-manifest.test.ts",
  "test/storage/schema-version.test.ts",
  "test/write/group-commit.test.ts",
]);
const PASSWORD = "test-server";

if (process.env.CLICKHOUSE_URL) {
  console.log("test:server: skipped: CLICKHOUSE_URL is set, so the whole suite has just run against that server");
  process.exit(0);
}

const dataDir = mkdtempSync(join(tmpdir(), "ingest-test-server-"));
const engine = Bun.spawn([process.execPath, "src/main.ts"], {
  cwd: ROOT,
  env: {
    PATH: process.env.PATH ?? "",
    HOST: "127.0.0.1",
    PORT: "0",
    DATA_DIR: dataDir,
    QUERY_PORT: "0",
    QUERY_PASSWORD: PASSWORD,
    QUERY_READONLY: "0",
    // tests run many queries at once, and each test file's service writes while the test reads
    QUERY_CONCURRENCY: "64",
  },
  stdout: "pipe",
  stderr: "inherit",
});

/** The query port's URL, from the engine process's `started` line. */
async function queryUrl(): Promise<string> {
  const reader = engine.stdout.getReader();
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the engine process exited before listening: ${text}`);
    text += new TextDecoder().decode(value);
    const line = text.split("\n").find((entry) => entry.includes('"msg":"started"'));
    if (line) {
      void (async () => {
        while (!(await reader.read()).done); // keep draining its log
      })();
      return (JSON.parse(line) as { query: string }).query;
    }
  }
}

let status = 1;
try {
  const url = await queryUrl();
  console.log(`test:server: the engine behind ${url}`);
  const paths = process.argv.slice(2);
  // two test processes, as `npm test` runs the suite (package.json), both against this engine
  const tests = Bun.spawn(
    [
      process.execPath,
      "test",
      "--timeout",
      "60000",
      "--parallel=2",
      "--no-isolate",
      ...(paths.length > 0 ? paths : suiteFiles()),
    ],
    {
      cwd: ROOT,
      env: { ...process.env, CLICKHOUSE_URL: url, CLICKHOUSE_USER: "default", CLICKHOUSE_PASSWORD: PASSWORD },
      stdout: "inherit",
      stderr: "inherit",
    },
  );
  status = await tests.exited;
} finally {
  engine.kill("SIGTERM");
  await engine.exited;
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(status);

/** The test files of SUITES that reach the database. */
function suiteFiles(): string[] {
  return SUITES.flatMap((suite) =>
    suite.endsWith(".ts") ? [suite] : [...new Bun.Glob(`${suite}/**/*.test.ts`).scanSync({ cwd: ROOT })].sort(),
  ).filter((file) => !NO_DATABASE.has(file));
}
