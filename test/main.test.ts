import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { ENV_NAMES, helpText } from "../src/config";
import { answers, environOf, processEnv, queryRows, ROOT, startProcess } from "./helpers/process";
import { scratchDir } from "./helpers/scratch";

const KEY = "key-1";
const post = (url: string, batch: object[]) =>
  fetch(`${url}/batch/`, {
    method: "POST",
    headers: { "content-type": "application/json", "content-encoding": "gzip" },
    body: Bun.gzipSync(JSON.stringify({ api_key: KEY, batch })),
  });

async function storedCount(env: Record<string, string>, where: string): Promise<number> {
  const [row] = await queryRows<{ n: string | number }>(env, `SELECT count() AS n FROM {db}.events WHERE ${where}`);
  return Number(row?.n);
}

describe("the service process", () => {
  test("starts, ingests, and shuts down cleanly on SIGTERM; what it acknowledged is on disk", async () => {
    const env = processEnv({ PUBLIC_API_KEYS: KEY });
    const { child, url } = await startProcess(env);
    try {
      expect(await (await fetch(`${url}/health`)).json()).toEqual({ ok: true });
      const response = await post(url, [{ event: "from_process", distinct_id: "u" }]);
      expect(await response.json()).toEqual({ status: "ok", ingested: 1, dropped: 0 });
    } finally {
      child.kill("SIGTERM");
    }
    expect(await child.exited).toBe(0);
    expect(await storedCount(env, "event = 'from_process'")).toBe(1);
  });

  test("SIGTERM the moment it says it started: a clean shutdown (its handler was in place before it said so)", async () => {
    // with the handler set after the line, such a stop often ended by the signal's default action (exit 143)
    for (let i = 0; i < 3; i++) {
      const { child } = await startProcess(processEnv({ PUBLIC_API_KEYS: KEY }));
      child.kill("SIGTERM");
      expect(await child.exited).toBe(0);
    }
  }, 30_000);

  test("starts itself again in its own place with the allocator's purge off; an operator's own value is kept", async () => {
    for (const [given, running] of [
      [undefined, "-1"],
      ["100", "100"],
    ] as const) {
      const env = processEnv({ PUBLIC_API_KEYS: KEY });
      if (given === undefined) delete env.MIMALLOC_PURGE_DELAY;
      else env.MIMALLOC_PURGE_DELAY = given;
      const { child, url } = await startProcess(env);
      try {
        expect(environOf(child.pid).MIMALLOC_PURGE_DELAY).toBe(running); // the same process ID, exec'd again
        expect((await post(url, [{ event: "restarted", distinct_id: "u" }])).status).toBe(200);
      } finally {
        child.kill("SIGTERM");
      }
      expect(await child.exited).toBe(0);
    }
  }, 30_000);

  test("with data piped into it (never read), it still writes: the embedded engine must not take it for an insert's", async () => {
    const env = processEnv({ PUBLIC_API_KEYS: KEY });
    const piped = new Blob(["not for the service\n".repeat(50_000)]);
    const { child, url } = await startProcess(env, undefined, undefined, piped);
    try {
      const response = await post(url, [{ event: "with_stdin", distinct_id: "u" }]);
      expect([response.status, await response.json()]).toEqual([200, { status: "ok", ingested: 1, dropped: 0 }]);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await child.exited).toBe(0);
    expect(await storedCount(env, "event = 'with_stdin'")).toBe(1);
  });

  test("SIGTERM to `npm start`, as the README starts it, stops the service itself", async () => {
    const env = processEnv({ PUBLIC_API_KEYS: KEY });
    const { child, url } = await startProcess(env, ["npm", "start", "--silent"]);
    expect(await answers(url)).toBe(true);
    child.kill("SIGTERM");
    await child.exited;
    const deadline = Date.now() + 10_000;
    while ((await answers(url)) && Date.now() < deadline) await Bun.sleep(100);
    expect(await answers(url)).toBe(false);
  }, 30_000);

  test("SIGTERM with uploads still trickling in: closed after SHUTDOWN_TIMEOUT_MS, and none of them acknowledged", async () => {
    const env = processEnv({ PUBLIC_API_KEYS: KEY, SHUTDOWN_TIMEOUT_MS: "500" });
    const { child, url } = await startProcess(env);
    const slow = Array.from({ length: 5 }, (_, i) => {
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(
            new TextEncoder().encode(`{"api_key":"${KEY}","batch":[{"event":"slow","distinct_id":"s${i}"}`),
          );
          for (let n = 0; n < 600; n++) {
            await Bun.sleep(50);
            controller.enqueue(new Uint8Array(1024).fill(32)); // 20 KiB/s: never idle
          }
          controller.enqueue(new TextEncoder().encode("]}"));
          controller.close();
        },
      });
      return fetch(`${url}/batch/`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        duplex: "half",
      } as RequestInit).then(
        (response) => response.status,
        () => "closed",
      );
    });
    await Bun.sleep(300);
    const started = performance.now();
    child.kill("SIGTERM");
    expect(await child.exited).toBe(0);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(await Promise.all(slow)).not.toContain(200);
    expect(await storedCount(env, "event = 'slow'")).toBe(0);
  }, 30_000);

  test("--help lists every setting with its default; --version prints the version", async () => {
    const run = (arg: string) =>
      Bun.spawnSync([process.execPath, "src/main.ts", arg], { cwd: ROOT, env: { PATH: process.env.PATH ?? "" } });
    const help = run("--help");
    expect(help.exitCode).toBe(0);
    const text = help.stdout.toString();
    for (const name of ENV_NAMES) expect(text).toContain(`  ${name} `);
    expect(text).toContain(helpText());
    expect(text).toContain("(default: 8000)");
    const version = run("--version");
    expect(version.stdout.toString().trim()).toBe(pkg.version);
  });

  test("an unknown command, flag or argument gets one sentence and exit 2, before any setting is read or port opened", async () => {
    const dataDir = join(scratchDir("ingest-refused-"), "data");
    const env = { PATH: process.env.PATH ?? "", HOST: "127.0.0.1", PORT: "0", DATA_DIR: dataDir };
    // Were one taken for the service, it would listen and log "started" on stdout until killed here.
    const run = async (args: string[], extra: Record<string, string> = {}) => {
      const child = Bun.spawn([process.execPath, "src/main.ts", ...args], {
        cwd: ROOT,
        env: { ...env, ...extra },
        stdout: "pipe",
        stderr: "pipe",
        timeout: 20_000,
      });
      const [stdout, stderr, code] = await Promise.all([
        new Response(child.stdout).text(),
        new Response(child.stderr).text(),
        child.exited,
      ]);
      return { code, stdout, stderr };
    };
    const refused = (sentence: string) => ({
      code: 2,
      stdout: "",
      stderr: `ingest: ${sentence} (see ingest --help)\n`,
    });
    const [vacuum, inherited, prot, short, extra, badConfig, version, help] = await Promise.all([
      run(["vacuum"]),
      run(["toString"]),
      run(["--prot", "9000"]),
      run(["-x"]),
      run(["--version", "now"]),
      run(["--prot"], { PORT: "not-a-port" }),
      run(["--version"]),
      run(["-h"]),
    ]);
    expect(vacuum).toEqual(refused('unknown command "vacuum"'));
    expect(inherited).toEqual(refused('unknown command "toString"'));
    expect(prot).toEqual(refused('unknown flag "--prot"'));
    expect(short).toEqual(refused('unknown flag "-x"'));
    expect(extra).toEqual(refused('unexpected argument "now"'));
    expect(badConfig).toEqual(refused('unknown flag "--prot"'));
    expect(version).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: "" });
    expect(help.code).toBe(0);
    expect(help.stdout).toStartWith(`ingest ${pkg.version}:`);
    expect(existsSync(dataDir)).toBe(false);
  }, 30_000);

  test("--health-check exits 0 while a service answers on PORT, 1 when none does", async () => {
    const env = processEnv({ PUBLIC_API_KEYS: KEY });
    const { child, url } = await startProcess(env);
    const check = (port: string) =>
      Bun.spawnSync([process.execPath, "src/main.ts", "--health-check"], { cwd: ROOT, env: { ...env, PORT: port } })
        .exitCode;
    try {
      expect(check(new URL(url).port)).toBe(0);
    } finally {
      child.kill("SIGTERM");
    }
    await child.exited;
    expect(check(new URL(url).port)).toBe(1);
  });

  test("a bad configuration exits non-zero with a message naming the variable", async () => {
    const child = Bun.spawn([process.execPath, "src/main.ts"], {
      cwd: ROOT,
      env: processEnv({ PORT: "not-a-port", MAX_EVENTS_PER_BATCH: "-1" }),
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
