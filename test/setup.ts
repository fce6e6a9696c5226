import { afterAll } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeScratchDirs } from "./helpers/scratch";

// chDB binds one data directory per process, so each test process (`npm test` runs two: --parallel=2) shares a
// fresh one and every test file works in a database of its own. With CLICKHOUSE_URL set, tests use that server
// instead (and still a database of their own each).
if (!process.env.CLICKHOUSE_URL) {
  const dataDir = mkdtempSync(join(tmpdir(), "ingest-test-"));
  process.env.TEST_DATA_DIR = dataDir;
  // No hook runs after a process's last file (in a --parallel worker a preload's afterAll runs after each file,
  // and bun test runs no exit handlers): a shell removes the directory once this process has ended.
  Bun.spawn(
    ["sh", "-c", 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; rm -rf "$2"', "sh", `${process.pid}`, dataDir],
    {
      stdin: "ignore",
      stdout: "ignore",
      stderr: "ignore",
    },
  ).unref();
}

// After each test file (a --parallel worker) or after all of them: the files' own scratch directories are done with.
afterAll(removeScratchDirs);
