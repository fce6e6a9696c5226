import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// chDB binds one data directory per process, so the whole test process shares a fresh one and every test
// file works in a database of its own. With CLICKHOUSE_URL set, tests use that server instead (and still a
// database of their own each).
if (!process.env.CLICKHOUSE_URL) {
  const dataDir = mkdtempSync(join(tmpdir(), "ingest-test-"));
  process.env.TEST_DATA_DIR = dataDir;
  process.on("exit", () => rmSync(dataDir, { recursive: true, force: true }));
}
