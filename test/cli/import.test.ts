import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { processEnv, runCommand } from "../helpers/process";
import { scratchDir } from "../helpers/scratch";

// `ingest import` as a user runs it from a shell, in a process of its own on a data directory of its own: what
// it prints, its exit status, and the hostile files.

const embedded = !process.env.CLICKHOUSE_URL;
const dir = scratchDir("ingest-import-cli-");

const ingestImport = (args: string[], env: Record<string, string> = {}) =>
  runCommand(["import", ...args], { ...processEnv(), ...env });

const event = (n: number) =>
  JSON.stringify({
    event: "e",
    distinct_id: `u-${n}`,
    timestamp: `2024-05-01T10:00:${String(n % 60).padStart(2, "0")}Z`,
  });

describe.skipIf(!embedded)("ingest import on a data directory", () => {
  test("prints one JSON summary and exits 0 when every line was imported; a gzip file the same", async () => {
    const path = join(dir, "good.jsonl.gz");
    writeFileSync(path, Bun.gzipSync(`${[1, 2, 3].map(event).join("\n")}\n`));
    const run = await ingestImport(["--data-dir", join(dir, "data-good"), path]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ files: 1, lines: 3, imported: 3, rejected: {} });
  });

  test("rejected lines go to --rejects as JSON lines, and the exit status is 1", async () => {
    const path = join(dir, "mixed.jsonl");
    writeFileSync(path, `${event(1)}\n{oops\n${event(2)}\n`);
    const rejects = join(dir, "rejects.jsonl");
    const run = await ingestImport(["--data-dir", join(dir, "data-mixed"), "--rejects", rejects, path]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ imported: 2, rejected: { "not JSON": 1 } });
    expect(readFileSync(rejects, "utf8")).toBe(
      `${JSON.stringify({ file: path, line: 2, reason: "not JSON", text: "{oops" })}\n`,
    );
  });

  test("--strict stops at the first rejected line, naming it", async () => {
    const path = join(dir, "strict.jsonl");
    writeFileSync(path, `${event(1)}\n{oops\n${event(2)}\n`);
    const run = await ingestImport(["--data-dir", join(dir, "data-strict"), "--strict", path]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`ingest import: ${path}, line 2: not JSON\n`);
    expect(run.stdout).toBe("");
  });

  test("a truncated gzip stops with the last line read; a missing file and a directory are named", async () => {
    const whole = Bun.gzipSync(`${Array.from({ length: 2000 }, (_, n) => event(n)).join("\n")}\n`);
    const path = join(dir, "truncated.jsonl.gz");
    writeFileSync(path, whole.subarray(0, Math.floor(whole.length * 0.6)));
    const truncated = await ingestImport(["--data-dir", join(dir, "data-truncated"), path]);
    expect(truncated.code).toBe(1);
    expect(truncated.stderr).toMatch(
      new RegExp(`^ingest import: ${path}: its gzip stream is truncated or corrupt after line \\d+ `),
    );

    const missing = await ingestImport(["--data-dir", join(dir, "data-missing"), join(dir, "nope.jsonl")]);
    expect([missing.code, missing.stderr]).toEqual([1, `ingest import: ${join(dir, "nope.jsonl")}: no such file\n`]);
    const directory = await ingestImport(["--data-dir", join(dir, "data-dir"), dir]);
    expect([directory.code, directory.stderr]).toEqual([1, `ingest import: ${dir} is a directory, not a file\n`]);
  }, 30_000);

  test("a usage error exits 2 with the usage", async () => {
    const run = await ingestImport(["--batch-size", "0", "x.jsonl"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--batch-size must be a positive integer");
    expect(run.stderr).toContain("Usage: ingest import");
  });
});
