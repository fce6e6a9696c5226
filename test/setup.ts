import { afterAll } from "bun:test";
import { removeScratchDirs, scratchDir } from "./helpers/scratch";

// chDB binds one data directory per process, so the whole test process shares a fresh one and every test
// file works in a database of its own. With CLICKHOUSE_URL set, tests use that server instead (and still a
// database of their own each).
if (!process.env.CLICKHOUSE_URL) process.env.TEST_DATA_DIR = scratchDir("ingest-test-");

// A preload's afterAll runs once, after every test file.
afterAll(removeScratchDirs);
