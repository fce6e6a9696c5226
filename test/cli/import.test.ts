import { describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { processEnv, queryRows, ROOT, runCommand } from "../helpers/process";
import { scratchDir } from "../helpers/scratch";

// `ingest import` as a user runs it from a shell, in a process of its own on a data directory of its own: what
// it prints, its exit status, and the hostile files.

const embedded = !process.env.CLICKHOUSE_URL;
const dir = scratchDir("ingest-import-cli-");

let checkpoints = 0;
/** `ingest import` with a checkpoint of its own (else it would be written where the tests run). */
const ingestImport = (args: string[], env: Record<string, string> = {}, stdin = "") =>
  runCommand(
    ["import", "--checkpoint", join(dir, `checkpoint-${checkpoints++}.json`), ...args],
    { ...processEnv(), ...env },
    stdin,
  );

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

  test("standard input, with no file or -, is read as a file is (the engine in the process never sees it)", async () => {
    const lines = `${Array.from({ length: 3000 }, (_, n) => event(n)).join("\n")}\n`;
    const run = await ingestImport(["--data-dir", join(dir, "data-stdin"), "--batch-size", "500"], {}, lines);
    expect([run.code, run.stderr]).toEqual([0, ""]);
    expect(JSON.parse(run.stdout)).toMatchObject({ files: 1, formats: { stdin: "posthog" }, imported: 3000 });
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

  test("hostile lines: 2 GiB without a line break, nesting a million deep; each rejected by number, the rest read", async () => {
    const path = join(dir, "hostile.jsonl");
    writeFileSync(path, "");
    truncateSync(path, 2 ** 31); // a sparse file: 2 GiB of NUL bytes, a line too long to hold, taking no disk
    const deepProperties = `{"event":"e","distinct_id":"d","timestamp":"2024-05-01T10:00:00Z","properties":${'{"a":'.repeat(100_000)}1${"}".repeat(100_001)}`;
    appendFileSync(path, `\n${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}\n${deepProperties}\n${event(1)}\n`);
    const rejects = join(dir, "hostile-rejects.jsonl");
    try {
      const run = await ingestImport(["--data-dir", join(dir, "data-hostile"), "--rejects", rejects, path]);
      expect(run.code).toBe(1);
      expect(JSON.parse(run.stdout)).toMatchObject({
        lines: 4,
        imported: 1,
        rejected: { "line too long": 1, "not an event": 1, "nested too deep": 1 },
      });
      const reported = readFileSync(rejects, "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line));
      expect(reported.map((r) => [r.line, r.reason])).toEqual([
        [1, "line too long"],
        [2, "not an event"],
        [3, "nested too deep"],
      ]);
    } finally {
      rmSync(path);
    }
  }, 60_000);

  test("a checkpoint it cannot write is refused before anything is imported", async () => {
    const path = join(dir, "one.jsonl");
    writeFileSync(path, `${event(1)}\n`);
    const checkpoint = join(dir, "no-such-dir", "checkpoint.json");
    const run = await ingestImport(["--data-dir", join(dir, "data-no-checkpoint"), "--checkpoint", checkpoint, path]);
    expect(run.code).toBe(1);
    expect(run.stderr).toStartWith(`ingest import: cannot write checkpoint ${checkpoint} (`);
    expect(run.stdout).toBe("");
  });

  test("a usage error exits 2 with the usage", async () => {
    const run = await ingestImport(["--batch-size", "0", "x.jsonl"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--batch-size must be a positive integer");
    expect(run.stderr).toContain("Usage: ingest import");
    const format = await ingestImport(["--format", "csv", "x.jsonl"]);
    expect([format.code, format.stderr.split("\n")[0]]).toEqual([
      2,
      "--format must be one of posthog, mixpanel, amplitude, segment",
    ]);
    const stdin = await ingestImport(["--resume"]);
    expect([stdin.code, stdin.stderr.split("\n")[0]]).toEqual([
      2,
      "--resume needs files: standard input cannot be resumed",
    ]);
  });

  test("--help is the usage on standard output; the other checks go in order, a bad configuration exiting 1", async () => {
    const badConfig = { MAX_BATCH_BYTES: "lots" };
    const [help, unknown, noKey, config, sizeFirst, configFirst] = await Promise.all([
      ingestImport(["--help", "--batch-size", "0"]),
      ingestImport(["--nope", "x.jsonl"]),
      ingestImport(["--url", "http://127.0.0.1:9/", "x.jsonl"], { PUBLIC_API_KEYS: "" }),
      ingestImport(["x.jsonl"], badConfig),
      ingestImport(["--batch-size", "0", "x.jsonl"], badConfig),
      ingestImport(["--format", "csv", "x.jsonl"], badConfig),
    ]);
    expect([help.code, help.stderr]).toEqual([0, ""]);
    expect(help.stdout).toStartWith("Usage: ingest import");
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringContaining("Usage: ingest import")]);
    expect(unknown.stderr).toContain("--nope");
    expect([noKey.code, noKey.stderr.split("\n")[0]]).toEqual([2, "--url needs --api-key (or PUBLIC_API_KEYS)"]);
    expect(config.code).toBe(1);
    expect(config.stderr).toStartWith("Invalid configuration:\n");
    expect(config.stderr).toContain("MAX_BATCH_BYTES");
    expect(config.stderr).not.toContain("Usage:");
    expect([sizeFirst.code, sizeFirst.stderr.split("\n")[0]]).toEqual([2, "--batch-size must be a positive integer"]);
    expect([configFirst.code, configFirst.stderr]).toEqual([1, config.stderr]);
  });
});

describe.skipIf(!embedded)("stopping and resuming", () => {
  // 40 batches of 500: the signal comes once the first is acknowledged, with most of the file still to read
  const LINES = 20_000;
  const path = join(dir, "history.jsonl");
  writeFileSync(path, `${Array.from({ length: LINES }, (_, n) => event(n)).join("\n")}\n`);

  /** Starts an import of `path` and kills it with `signal` once its checkpoint has acknowledged some lines. */
  async function interrupted(dataDir: string, checkpoint: string, signal: "SIGINT" | "SIGKILL") {
    const env = processEnv({ DATA_DIR: dataDir });
    const child = Bun.spawn(
      [process.execPath, "src/main.ts", "import", "--checkpoint", checkpoint, "--batch-size", "500", path],
      { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" },
    );
    while (acknowledged(checkpoint) === 0) await Bun.sleep(20);
    child.kill(signal);
    const [stdout, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
    return { env, stdout, code, line: acknowledged(checkpoint) };
  }
  const acknowledged = (checkpoint: string): number =>
    existsSync(checkpoint) ? (JSON.parse(readFileSync(checkpoint, "utf8")).files[path]?.line ?? 0) : 0;
  const stored = async (env: Record<string, string>, final: "FINAL" | "") =>
    Number((await queryRows<{ n: string }>(env, `SELECT count() AS n FROM {db}.events ${final}`))[0]?.n);

  test("Ctrl-C stops once the batches sent are answered, with the checkpoint written; --resume imports the rest", async () => {
    const checkpoint = join(dir, "stopped.checkpoint.json");
    const first = await interrupted(join(dir, "data-stopped"), checkpoint, "SIGINT");
    expect(first.code).toBe(130);
    const summary = JSON.parse(first.stdout);
    expect(summary).toMatchObject({ stopped: true });
    expect(summary.imported).toBe(first.line); // one event a line: what was stored is what the checkpoint says
    expect(first.line).toBeLessThan(LINES);

    const rest = await runCommand(["import", "--checkpoint", checkpoint, "--resume", path], first.env);
    expect(rest.code).toBe(0);
    expect(JSON.parse(rest.stdout)).toMatchObject({ imported: LINES - first.line, stopped: false });
    expect(await stored(first.env, "")).toBe(LINES); // not one event twice, even before merges

    const again = await runCommand(["import", "--checkpoint", checkpoint, "--resume", path], first.env);
    expect(JSON.parse(again.stdout)).toMatchObject({ lines: 0, imported: 0 }); // done: nothing to resume
  }, 60_000);

  test("after a SIGKILL, --resume goes on from the last checkpoint; each event is stored once", async () => {
    const checkpoint = join(dir, "killed.checkpoint.json");
    const first = await interrupted(join(dir, "data-killed"), checkpoint, "SIGKILL");
    expect(first.code).toBe(137);
    const rest = await runCommand(["import", "--checkpoint", checkpoint, "--resume", path], first.env);
    expect(rest.code).toBe(0);
    expect(JSON.parse(rest.stdout).imported).toBe(LINES - first.line);
    expect(await stored(first.env, "FINAL")).toBe(LINES); // what the killed run stored past its checkpoint, once
  }, 60_000);

  test("a file changed since its checkpoint is refused, not resumed at a place that means nothing now", async () => {
    const checkpoint = join(dir, "changed.checkpoint.json");
    const small = join(dir, "changed.jsonl");
    writeFileSync(small, `${event(1)}\n`);
    const env = processEnv({ DATA_DIR: join(dir, "data-changed") });
    expect((await runCommand(["import", "--checkpoint", checkpoint, small], env)).code).toBe(0);
    writeFileSync(small, `${event(1)}\n${event(2)}\n`);
    const resumed = await runCommand(["import", "--checkpoint", checkpoint, "--resume", small], env);
    expect([resumed.code, resumed.stderr]).toEqual([
      1,
      `ingest import: ${small} changed since checkpoint ${checkpoint} was written: import it without --resume\n`,
    ]);
  });
});
