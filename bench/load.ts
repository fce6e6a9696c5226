/**
 * `npm run bench [http|mix|new]`: the service as its own process on a fresh data directory, driven by wrk (a
 * separate load generator) with posthog-node-shaped batches of 100 events, against the engine's own insert
 * rate for the same rows, measured in the same run. Never part of .ci/run.
 *
 *   http  distinct IDs from 10,000 people, 2% $identify with $anon_distinct_id, $set and $set_once
 *   mix   identity-heavy: 20% $identify / $create_alias / $set events
 *   new   every event from a distinct ID never seen before (a busy public site)
 *
 * BENCH_SECONDS (30) and BENCH_CONNECTIONS (16) set the load. wrk comes from Debian (`apt-get install wrk`);
 * this script installs it when it can (as root), else says what is missing.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { random } from "../test/helpers/identity-model"; // the seeded PRNG: every run sends the same batches
import { rssMiB, startProcess } from "../test/helpers/process";

const ROOT = join(import.meta.dir, "..");
const MODE = (process.argv[2] ?? "http") as "http" | "mix" | "new";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const EVENTS_PER_BATCH = 100;
const PEOPLE = 10_000;
const KEY = "bench-key";
/** Rows the engine baseline inserts: fixed, so that runs compare. */
const BASELINE_ROWS = 300_000;

function ensureWrk(): void {
  if (Bun.which("wrk")) return;
  if (process.getuid?.() === 0) {
    Bun.spawnSync(["apt-get", "install", "-y", "wrk"], { env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  }
  if (!Bun.which("wrk")) {
    console.error("bench: wrk is missing; install it with `apt-get install wrk` (Debian) and run again.");
    process.exit(1);
  }
}

let newIds = 0;

/** One event as posthog-node sends it (~400 bytes). */
function event(rng: ReturnType<typeof random>, at: number): Record<string, unknown> {
  const person = rng.int(PEOPLE);
  const distinctId = MODE === "new" ? `visitor-${process.pid}-${newIds++}` : `user-${person}`;
  const properties: Record<string, unknown> = {
    $session_id: `session-${person}-${Math.floor(at / 1800_000)}`,
    $window_id: `window-${person % 97}`,
    $current_url: `https://app.example.com/projects/${person % 50}/insights?tab=${rng.int(5)}`,
    $host: "app.example.com",
    $lib: "posthog-node",
    $lib_version: "5.70.0",
    plan: ["free", "pro", "enterprise"][person % 3],
    seats: person % 40,
    experiment: rng.next() < 0.5 ? "control" : "test",
  };
  let name = rng.next() < 0.6 ? "$pageview" : "clicked";
  const identityShare = MODE === "mix" ? 0.2 : 0.02;
  if (MODE !== "new" && rng.next() < identityShare) {
    const kind = MODE === "mix" ? rng.int(3) : 0;
    if (kind === 0) {
      name = "$identify";
      properties.$anon_distinct_id = `anon-${person}-${rng.int(3)}`;
      properties.$set = { email: `user${person}@example.com`, plan: properties.plan };
      properties.$set_once = { first_seen: new Date(at).toISOString() };
    } else if (kind === 1) {
      name = "$create_alias";
      properties.alias = `alias-${person}-${rng.int(3)}`;
    } else {
      properties.$set = { last_plan_change: new Date(at).toISOString(), seats: properties.seats };
    }
  }
  return {
    uuid: Bun.randomUUIDv7(),
    event: name,
    distinct_id: distinctId,
    timestamp: new Date(at).toISOString(),
    properties,
    type: "capture",
    library: "posthog-node",
    library_version: "5.70.0",
  };
}

function writeBodies(path: string, count: number): number {
  const rng = random(20261122);
  const start = Date.UTC(2026, 10, 1);
  const lines: string[] = [];
  let bytes = 0;
  for (let b = 0; b < count; b++) {
    const batch = Array.from({ length: EVENTS_PER_BATCH }, (_, i) =>
      event(rng, start + (b * EVENTS_PER_BATCH + i) * 100),
    );
    const line = JSON.stringify({ api_key: KEY, batch, sent_at: new Date(start).toISOString() });
    bytes += line.length;
    lines.push(line);
  }
  writeFileSync(path, `${lines.join("\n")}\n`);
  return bytes / (count * EVENTS_PER_BATCH);
}

interface WrkResult {
  requests: number;
  seconds: number;
  non2xx: number;
  socketErrors: string;
  latency: Record<string, string>;
}

function parseWrk(output: string): WrkResult {
  const completed = /(\d+) requests in ([\d.]+)(ms|s|m)/.exec(output);
  const unit = completed?.[3] === "ms" ? 0.001 : completed?.[3] === "m" ? 60 : 1;
  const latency: Record<string, string> = {};
  for (const match of output.matchAll(/^\s+(50|75|90|99)%\s+([\d.]+\w+)/gm)) latency[`p${match[1]}`] = match[2]!;
  return {
    requests: Number(completed?.[1] ?? 0),
    seconds: Number(completed?.[2] ?? 0) * unit,
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0),
    socketErrors: /Socket errors: (.*)/.exec(output)?.[1] ?? "none",
    latency,
  };
}

ensureWrk();
const work = mkdtempSync(join(tmpdir(), "ingest-bench-"));
try {
  const bodiesFile = join(work, "bodies.jsonl");
  const bodyCount = MODE === "new" ? Math.min(6000, Math.ceil((30_000 * SECONDS) / EVENTS_PER_BATCH)) : 1000;
  const bytesPerEvent = writeBodies(bodiesFile, bodyCount);
  const service = await startProcess({
    PATH: process.env.PATH ?? "",
    HOST: "127.0.0.1",
    PORT: "0",
    DATA_DIR: join(work, "service"),
    PUBLIC_API_KEYS: KEY,
  });
  const pid = service.child.pid;
  // warm up (schema, JIT, first parts), then the idle baseline
  const warmUp = readFileSync(bodiesFile, "utf8").split("\n", 5);
  for (const body of warmUp) {
    await fetch(`${service.url}/batch/`, { method: "POST", headers: { "content-type": "application/json" }, body });
  }
  await Bun.sleep(1000);
  const idleRss = rssMiB(pid);
  let peakRss = idleRss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, rssMiB(pid));
  }, 100);
  const wrk = Bun.spawn(
    [
      "wrk",
      "-t2",
      `-c${CONNECTIONS}`,
      `-d${SECONDS}s`,
      "--timeout",
      "30s",
      "--latency",
      "-s",
      join(ROOT, "bench", "wrk.lua"),
      service.url,
      "--",
      bodiesFile,
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  const wrkOutput = await new Response(wrk.stdout).text(); // async, so the RSS sampler keeps running
  await wrk.exited;
  clearInterval(sampler);
  service.child.kill("SIGTERM");
  await service.child.exited;
  const result = parseWrk(wrkOutput);
  const acknowledged = (result.requests - result.non2xx) * EVENTS_PER_BATCH;
  const serviceRate = acknowledged / result.seconds;

  const baseline = Bun.spawnSync(
    [
      process.execPath,
      join(ROOT, "bench", "engine-baseline.ts"),
      bodiesFile,
      join(work, "baseline"),
      String(BASELINE_ROWS),
    ],
    { cwd: ROOT, stdout: "pipe", stderr: "inherit" },
  );
  const engine = JSON.parse(baseline.stdout.toString()) as { rows: number; seconds: number; rate: number };

  const fmt = (n: number) => Math.round(n).toLocaleString("en");
  console.log(
    `bench ${MODE}: ${CONNECTIONS} connections, ${SECONDS} s, batches of ${EVENTS_PER_BATCH} events (~${Math.round(bytesPerEvent)} bytes each)`,
  );
  console.log(
    `  service          ${fmt(serviceRate)} events/s acknowledged (${fmt(acknowledged)} events, ${result.non2xx} non-2xx, socket errors: ${result.socketErrors})`,
  );
  console.log(`  latency          p50 ${result.latency.p50}  p90 ${result.latency.p90}  p99 ${result.latency.p99}`);
  console.log(
    `  RSS              idle ${Math.round(idleRss)} MiB, peak ${Math.round(peakRss)} MiB (+${Math.round(peakRss - idleRss)} MiB)`,
  );
  console.log(`  engine baseline  ${fmt(engine.rate)} rows/s (${fmt(engine.rows)} rows, 10,000 per insert, same run)`);
  console.log(`  ratio service/engine: ${(serviceRate / engine.rate).toFixed(2)}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
