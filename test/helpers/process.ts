import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { workerThreadsFor } from "../../src/engine/restart";
import { scratchDir } from "./scratch";
import { clickhouseEnv, uniqueDatabase } from "./service";

export const ROOT = join(import.meta.dir, "..", "..");

/**
 * The environment of a service run as its own process: its own embedded data directory (or the test server),
 * a database of its own, a free port on loopback.
 */
export function processEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOST: "127.0.0.1",
    PORT: "0",
    CLICKHOUSE_DATABASE: uniqueDatabase(),
    // what the service would set for itself by starting again (src/engine/restart.ts): given, it starts once
    MIMALLOC_PURGE_DELAY: "-1",
    UV_THREADPOOL_SIZE: String(workerThreadsFor(0)),
    ...extra,
  };
  if (process.env.CLICKHOUSE_URL) Object.assign(env, clickhouseEnv());
  else env.DATA_DIR ??= scratchDir("ingest-process-");
  return env;
}

/** The service's "started" log line: where it listens. */
export interface Started {
  readonly url: string;
  /** The query port's URL, when it has one. */
  readonly query?: string;
  /** The metrics URL, when it serves them. */
  readonly metrics?: string;
  /** The admin door's URL, when it has one. */
  readonly admin?: string;
}

/** Every whole JSON line a service logged, parsed. */
export function logEntries(output: string): Record<string, unknown>[] {
  return output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The service's "started" log line, once it has been printed whole. */
function startedEntry(output: string): Started | undefined {
  const whole = output.slice(0, output.lastIndexOf("\n") + 1);
  return logEntries(whole).find((entry) => entry.msg === "started") as Started | undefined;
}

export interface RunningService {
  readonly child: Subprocess<"ignore", "pipe", "pipe">;
  /** The public URL, without a trailing slash. */
  readonly url: string;
  readonly started: Started;
  /** Everything the process printed on stdout so far (it keeps being read). */
  output(): string;
}

/**
 * Starts `command` (default: the service from source) with exactly `env`, in `cwd` (standard input: nothing, or
 * `stdin`), and waits for its "started" log line.
 */
export async function startProcess(
  env: Record<string, string>,
  command = [process.execPath, "src/main.ts"],
  cwd = ROOT,
  stdin: "ignore" | Blob = "ignore",
) {
  const child = Bun.spawn(command, { cwd, env, stdin, stdout: "pipe", stderr: "pipe" });
  let text = "";
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  const started = await (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`exited before listening: ${text}${await new Response(child.stderr).text()}`);
      text += decoder.decode(value);
      const entry = startedEntry(text);
      if (entry) return entry;
    }
  })();
  void (async () => {
    for (let read = await reader.read(); !read.done; read = await reader.read()) text += decoder.decode(read.value);
  })();
  return { child, url: started.url.replace(/\/$/, ""), started, output: () => text } satisfies RunningService;
}

/** Runs `ingest <args>` from source as a command in a process of its own, and returns what it printed. */
export function runCommand(args: readonly string[], env: Record<string, string>, stdin = "") {
  return captured([process.execPath, "src/main.ts", ...args], env, stdin);
}

/** Runs `command` in ROOT to its end, and returns its output and exit status. */
async function captured(command: readonly string[], env: Record<string, string>, stdin = "") {
  const child = Bun.spawn([...command], {
    cwd: ROOT,
    env,
    stdin: new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { stdout, stderr, code };
}

/** Runs `sql` against the data the process wrote, from a process of its own (chDB binds a directory per process). */
export async function queryRows<Row>(env: Record<string, string>, sql: string): Promise<Row[]> {
  const { stdout, stderr, code } = await captured([process.execPath, join(import.meta.dir, "read-rows.ts"), sql], env);
  if (code !== 0) throw new Error(`read-rows failed (${code}): ${stderr}`);
  return JSON.parse(stdout) as Row[];
}

/** Runs `statements` in order against the data of a stopped service, from a process of its own (as queryRows). */
export async function runStatements(env: Record<string, string>, ...statements: string[]): Promise<void> {
  const { stderr, code } = await captured(
    [process.execPath, join(import.meta.dir, "write-sql.ts"), ...statements],
    env,
  );
  if (code !== 0) throw new Error(`write-sql failed (${code}): ${stderr}`);
}

/** A process's resident memory in MiB, from /proc. */
export function rssMiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN) / 1024;
}

/** A running process's environment, as it was last exec'd (`/proc/PID/environ`). */
export function environOf(pid: number): Record<string, string> {
  const entries = readFileSync(`/proc/${pid}/environ`, "utf8")
    .split("\0")
    .filter((entry) => entry !== "");
  return Object.fromEntries(
    entries.map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]),
  );
}

/** Whether anything still answers at `url`. */
export async function answers(url: string): Promise<boolean> {
  return fetch(`${url}/health`).then(
    () => true,
    () => false,
  );
}
