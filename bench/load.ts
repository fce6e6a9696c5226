/**
 * `npm run bench [http|mix|new|persons]`: the service as its own process on a fresh data directory, driven by
 * wrk (a separate load generator) with posthog-node-shaped batches of 100 events, against the engine's own
 * insert rate for the same rows, measured in the same run. Never part of .ci/run.
 *
 *   http     distinct IDs from 10,000 people, 2% $identify with $anon_distinct_id, $set and $set_once
 *   mix      identity-heavy: 20% $identify / $create_alias / $set events
 *   new      every event from a distinct ID never seen before (a busy public site)
 *   persons  the http load over 10,000 and over 1,000,000 known persons (seeded through the service first),
 *            each measured cold (just restarted) and warm (right after)
 *
 * The service's own settings pass through (e.g. FLUSH_LINGER_MS=0) and are printed first.
 * BENCH_SECONDS (30) and BENCH_CONNECTIONS (16) set the load; BENCH_PEOPLE (1,000,000) the large population of
 * `persons`, BENCH_ROUNDS (2) how many times its populations take turns, and BENCH_DATA=<dir> where it keeps
 * its seeded data for the next run. BENCH_PROFILE=<dir> writes the service's CPU profile there (Bun's
 * --cpu-prof-md). The CPU the service spent is printed per kind of thread: the JavaScript thread against the
 * engine's own threads.
 * wrk comes from Debian (`apt-get install wrk`); this script installs it when it can (as root), else says so.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ENV_NAMES } from "../src/config";
import { random } from "../test/helpers/identity-model"; // the seeded PRNG: every run sends the same batches
import { type RunningService, rssMiB, startProcess } from "../test/helpers/process";

const ROOT = join(import.meta.dir, "..");
const MODE = (process.argv[2] ?? "http") as "http" | "mix" | "new" | "persons";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
/** People the `http` and `mix` loads draw from, and the small population of `persons`. */
const PEOPLE = 10_000;
const LARGE_POPULATION = Number(process.env.BENCH_PEOPLE ?? 1_000_000);
/** Rounds of `persons`: each runs both populations, cold and warm; the order alternates. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
type Temperature = "cold" | "warm";
/**
 * BENCH_DATA=<dir>: `persons` keeps its seeded data directories there, and a later run finds them and skips the
 * seeding (each run's loads add their events to them).
 */
const KEPT_DATA = process.env.BENCH_DATA;
const EVENTS_PER_BATCH = 100;
const KEY = "bench-key";
/** Rows the engine baseline inserts, and how many an insert: fixed, so that runs compare. */
const BASELINE_ROWS = 300_000;
const BASELINE_ROWS_PER_INSERT = 10_000;

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

type Shape = "known" | "mix" | "new";

interface Population {
  readonly shape: Shape;
  readonly people: number;
  /** The known people's distinct IDs, when they were seeded; else `user-0` … */
  readonly ids?: readonly string[];
}

/** A new visitor's distinct ID as posthog-js makes it: a UUIDv7, so new IDs sort after the ones already stored. */
const visitorId = (): string => Bun.randomUUIDv7();

/** One event as posthog-node sends it (~470 bytes). */
function event(
  rng: ReturnType<typeof random>,
  at: number,
  { shape, people, ids }: Population,
): Record<string, unknown> {
  const person = rng.int(people);
  const distinctId = shape === "new" ? visitorId() : (ids?.[person] ?? `user-${person}`);
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
  const identityShare = shape === "mix" ? 0.2 : 0.02;
  if (shape !== "new" && rng.next() < identityShare) {
    const kind = shape === "mix" ? rng.int(3) : 0;
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

const START = Date.UTC(2026, 10, 1);

const JSON_POST = { method: "POST", headers: { "Content-Type": "application/json" } } as const;

function body(batch: readonly object[]): string {
  return JSON.stringify({ api_key: KEY, batch, sent_at: new Date(START).toISOString() });
}

/** Writes `count` request bodies, one a line; returns the mean bytes per event. */
function writeBodies(path: string, count: number, population: Population): number {
  const rng = random(20261122);
  const lines: string[] = [];
  for (let b = 0; b < count; b++) {
    const at = (i: number) => START + (b * EVENTS_PER_BATCH + i) * 100;
    lines.push(body(Array.from({ length: EVENTS_PER_BATCH }, (_, i) => event(rng, at(i), population))));
  }
  writeFileSync(path, `${lines.join("\n")}\n`);
  return lines.reduce((sum, line) => sum + line.length, 0) / (count * EVENTS_PER_BATCH);
}

/** Below this, a tenth of the seeding is a handful of request rounds, too few to time: only the overall rate is printed. */
const TIMED_TENTH = 16 * EVENTS_PER_BATCH * 10;

/**
 * Makes `people` persons known: one `$pageview` from each of `people` new visitors through the service, 16
 * requests at a time: new-visitor traffic while the persons table grows from empty. Returns their distinct IDs,
 * the new IDs/s overall and for each tenth.
 */
async function seed(url: string, people: number): Promise<{ ids: string[]; rate: number; tenths: number[] }> {
  const ids = Array.from({ length: people }, visitorId);
  const tenths: number[] = [];
  const started = performance.now();
  let mark = { at: started, done: 0 };
  let done = 0;
  let next = 0;
  const worker = async () => {
    for (let first = next; first < people; first = next) {
      next += EVENTS_PER_BATCH;
      const batch = Array.from({ length: Math.min(EVENTS_PER_BATCH, people - first) }, (_, i) => ({
        uuid: Bun.randomUUIDv7(),
        event: "$pageview",
        distinct_id: ids[first + i],
        timestamp: new Date(START).toISOString(),
        properties: { $current_url: "https://app.example.com/", $lib: "posthog-node" },
      }));
      for (;;) {
        const response = await fetch(`${url}/batch/`, { ...JSON_POST, body: body(batch) });
        await response.arrayBuffer();
        if (response.ok) break;
        if (response.status !== 503) throw new Error(`seeding: ${response.status}`);
        await Bun.sleep(1000);
      }
      done += batch.length;
      if (done >= ((tenths.length + 1) * people) / 10) {
        const now = { at: performance.now(), done };
        tenths.push((now.done - mark.done) / ((now.at - mark.at) / 1000));
        mark = now;
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return { ids, rate: people / ((performance.now() - started) / 1000), tenths };
}

/**
 * Waits, at most 180 s, until the service's active parts have not changed for 10 s: seeding writes a population
 * in under a minute and leaves merges behind, which the cold load right after would otherwise pay for. Returns
 * how long it waited.
 */
async function settleMerges(service: Service): Promise<string> {
  const started = performance.now();
  let last = "";
  for (let unchanged = 0; unchanged < 10 && performance.now() - started < 180_000; ) {
    await Bun.sleep(1000);
    const parts = JSON.stringify((await flushes(service)).activeParts);
    unchanged = parts === last ? unchanged + 1 : 0;
    last = parts;
  }
  return `${Math.round((performance.now() - started) / 1000)} s (active parts ${last})`;
}

/** CPU seconds each kind of thread of `pid` has used so far, by thread name with digits dropped. */
function threadCpu(pid: number): Map<string, number> {
  const ticks = new Map<string, number>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${task}/stat`, "utf8");
    } catch {
      continue; // the thread ended
    }
    const name = task === String(pid) ? "javascript" : stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const kind = name.replace(/[\d_-]+$/, "").trim();
    ticks.set(kind, (ticks.get(kind) ?? 0) + (Number(fields[11]) + Number(fields[12])) / 100);
  }
  return ticks;
}

function cpuSpent(before: Map<string, number>, after: Map<string, number>): string {
  const spent = [...after].map(([kind, seconds]) => [kind, seconds - (before.get(kind) ?? 0)] as const);
  const top = spent.filter(([, seconds]) => seconds >= 0.05).sort((a, b) => b[1] - a[1]);
  const total = spent.reduce((sum, [, seconds]) => sum + seconds, 0);
  return `${total.toFixed(1)} s: ${top.map(([kind, seconds]) => `${kind} ${seconds.toFixed(1)}`).join(", ")}`;
}

interface Service extends RunningService {
  readonly metricsUrl: string;
}

/** Services still running: stopped in the end however the bench ends, so none outlives it. */
const running = new Set<Service>();

async function startService(dataDir: string): Promise<Service> {
  const profile = process.env.BENCH_PROFILE;
  const service = await startProcess(
    {
      PATH: process.env.PATH ?? "",
      HOST: "127.0.0.1",
      PORT: "0",
      METRICS_PORT: "0",
      DATA_DIR: dataDir,
      PUBLIC_API_KEYS: KEY,
      ...TUNING,
    },
    [process.execPath, ...(profile ? ["--cpu-prof-md", `--cpu-prof-dir=${profile}`] : []), "src/main.ts"],
  );
  const started = service
    .output()
    .split("\n")
    .map((line) => (line.startsWith("{") ? (JSON.parse(line) as { msg?: string; metrics?: string }) : {}))
    .find((entry) => entry.msg === "started");
  const withMetrics = { ...service, metricsUrl: started?.metrics ?? "" };
  running.add(withMetrics);
  return withMetrics;
}

/** Set by the bench itself; `CLICKHOUSE_*` are left out too, since they choose another database than the fresh
 * embedded one the baseline compares with. */
const BENCH_OWNS = new Set(["PORT", "HOST", "METRICS_PORT", "DATA_DIR", "PUBLIC_API_KEYS"]);

/**
 * The service's settings the bench is run with (e.g. `FLUSH_LINGER_MS=0`, or caches that hold a whole large
 * population): every variable the service reads, except the bench's own. Printed with the results, so that an
 * A/B shows what it compared.
 */
const TUNING: Readonly<Record<string, string>> = Object.fromEntries(
  ENV_NAMES.filter((name) => !BENCH_OWNS.has(name) && !name.startsWith("CLICKHOUSE_") && process.env[name]).map(
    (name) => [name, process.env[name]!],
  ),
);

async function stop(service: Service): Promise<void> {
  running.delete(service);
  service.child.kill("SIGTERM");
  await service.child.exited;
}

interface Histogram {
  readonly sum: number;
  readonly count: number;
}

const PHASES = ["identity", "persons", "links", "events"] as const;

/** Flushes that took longer than these, counted from the duration histogram's buckets. */
const SLOW_FLUSH_SECONDS = ["0.05", "0.1", "0.25"] as const;

/** The flush histograms the bench reads: sizes, durations, and durations by phase; and the tables' active parts. */
interface Flushes {
  readonly size: Histogram;
  readonly seconds: Histogram;
  /** Flushes that took at most each of SLOW_FLUSH_SECONDS. */
  readonly within: Readonly<Record<(typeof SLOW_FLUSH_SECONDS)[number], number>>;
  readonly phases: Readonly<Record<(typeof PHASES)[number], Histogram>>;
  readonly activeParts: Readonly<Record<string, number>>;
}

/** The flush histograms, from the service's metrics. */
async function flushes(service: Service): Promise<Flushes> {
  const text = await (await fetch(service.metricsUrl)).text();
  /** The value of one sample: `metric`, with exactly these labels (or none). */
  const sample = (metric: string, labels = "") =>
    Number(new RegExp(`^${metric}(?:\\{${labels}\\})? (\\S+)$`, "m").exec(text)?.[1]);
  const histogram = (name: string, labels = ""): Histogram => ({
    sum: sample(`${name}_sum`, labels),
    count: sample(`${name}_count`, labels),
  });
  const phases = Object.fromEntries(
    PHASES.map((phase) => [phase, histogram("ingest_flush_phase_seconds", `phase="${phase}"`)]),
  ) as Flushes["phases"];
  const activeParts = Object.fromEntries(
    [...text.matchAll(/^ingest_clickhouse_active_parts\{table="(\w+)"\} (\S+)$/gm)].map((m) => [m[1]!, Number(m[2])]),
  );
  const within = Object.fromEntries(
    SLOW_FLUSH_SECONDS.map((le) => [le, sample("ingest_flush_duration_seconds_bucket", `le="${le}"`)]),
  ) as Flushes["within"];
  return {
    size: histogram("ingest_flush_events"),
    seconds: histogram("ingest_flush_duration_seconds"),
    within,
    phases,
    activeParts,
  };
}

/** Mean per observation between two readings of a histogram. */
const mean = (before: Histogram, after: Histogram): number => (after.sum - before.sum) / (after.count - before.count);

interface LoadResult {
  readonly rate: number;
  readonly acknowledged: number;
  readonly non2xx: number;
  readonly socketErrors: string;
  readonly latency: Record<string, string>;
  readonly idleRss: number;
  readonly peakRss: number;
  readonly cpu: string;
  /** Mean events per flush during the load. */
  readonly flushEvents: number;
  /** Mean milliseconds per flush in each phase, and between one flush and the next (answering, the clients). */
  readonly phaseMs: Readonly<Record<(typeof PHASES)[number] | "between", number>>;
  /** Flushes during the load, and how many of them took longer than each of SLOW_FLUSH_SECONDS. */
  readonly flushCount: number;
  readonly slowFlushes: Readonly<Record<(typeof SLOW_FLUSH_SECONDS)[number], number>>;
  /** Active parts per table right after the load: merges keep up when these stay in the tens. */
  readonly activeParts: Readonly<Record<string, number>>;
  /** The service's warnings, errors and refusals during the load, grouped (see warningsIn). */
  readonly warnings: readonly string[];
}

function parseWrk(output: string) {
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

/** Warms the service up (JIT, first parts), then drives it with wrk for SECONDS while sampling its RSS and CPU. */
async function drive(service: Service, bodiesFile: string): Promise<LoadResult> {
  const pid = service.child.pid;
  for (const warmUp of readFileSync(bodiesFile, "utf8").split("\n", 5)) {
    const response = await fetch(`${service.url}/batch/`, { ...JSON_POST, body: warmUp });
    if (!response.ok) throw new Error(`warm-up: ${response.status} ${await response.text()}`);
  }
  await Bun.sleep(1000);
  const idleRss = rssMiB(pid);
  let peakRss = idleRss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, rssMiB(pid));
  }, 100);
  const before = await flushes(service);
  const loggedBefore = service.output().lastIndexOf("\n") + 1; // the start of the line being written, if any
  const cpuBefore = threadCpu(pid);
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
  const output = await new Response(wrk.stdout).text(); // async, so the RSS sampler keeps running
  await wrk.exited;
  clearInterval(sampler);
  const cpu = cpuSpent(cpuBefore, threadCpu(pid));
  const after = await flushes(service);
  const result = parseWrk(output);
  const flushCount = after.seconds.count - before.seconds.count;
  const acknowledged = (result.requests - result.non2xx) * EVENTS_PER_BATCH;
  return {
    rate: acknowledged / result.seconds,
    acknowledged,
    non2xx: result.non2xx,
    socketErrors: result.socketErrors,
    latency: result.latency,
    idleRss,
    peakRss,
    cpu,
    flushEvents: mean(before.size, after.size),
    phaseMs: {
      ...(Object.fromEntries(
        PHASES.map((phase) => [phase, 1000 * mean(before.phases[phase], after.phases[phase])]),
      ) as Record<(typeof PHASES)[number], number>),
      between: (1000 * result.seconds) / flushCount - 1000 * mean(before.seconds, after.seconds),
    },
    flushCount,
    slowFlushes: Object.fromEntries(
      SLOW_FLUSH_SECONDS.map((le) => [le, flushCount - (after.within[le] - before.within[le])]),
    ) as LoadResult["slowFlushes"],
    activeParts: after.activeParts,
    warnings: warningsIn(service.output().slice(loggedBefore)),
  };
}

/**
 * The warnings and errors the service logged, and the requests it refused, as "count × message (status, code,
 * reason, cause)", most first.
 */
function warningsIn(logged: string): string[] {
  const counts = new Map<string, number>();
  // whole lines only: the last one may still be arriving
  for (const line of logged.split("\n").slice(0, -1)) {
    if (!line.startsWith("{")) continue;
    const entry = JSON.parse(line) as Record<string, unknown>;
    const refused = typeof entry.status === "number" && entry.status >= 400; // 4xx are logged at info
    if (entry.level !== "warn" && entry.level !== "error" && !refused) continue;
    const details = [entry.status, entry.code, entry.reason, entry.cause].filter((detail) => detail !== undefined);
    const key = `${entry.level} ${entry.msg}${details.length > 0 ? ` (${JSON.stringify(details).slice(1, 200)})` : ""}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]).map(([key, count]) => `${fmt(count)} × ${key}`);
}

interface EngineResult {
  readonly rows: number;
  readonly rate: number;
  readonly idleRss: number;
  readonly peakRss: number;
  /** One insert's time, median and 99th percentile (ms). */
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** The engine's own insert rate for the rows of `bodiesFile`, `rowsPerInsert` at a time, in a process of its own. */
function engineBaseline(
  bodiesFile: string,
  dataDir: string,
  rowsPerInsert: number,
  rows = BASELINE_ROWS,
): EngineResult {
  const script = join(ROOT, "bench", "engine-baseline.ts");
  const args = [bodiesFile, dataDir, String(rows), String(rowsPerInsert)];
  const run = Bun.spawnSync([process.execPath, script, ...args], { cwd: ROOT, stdout: "pipe", stderr: "inherit" });
  return JSON.parse(run.stdout.toString()) as EngineResult;
}

const fmt = (n: number) => Math.round(n).toLocaleString("en");

function printLoad(label: string, result: LoadResult): void {
  const { latency } = result;
  console.log(
    `  ${label.padEnd(16)} ${fmt(result.rate)} events/s acknowledged (${fmt(result.acknowledged)} events, ` +
      `${result.non2xx} non-2xx, socket errors: ${result.socketErrors}; ${fmt(result.flushEvents)} events a flush)`,
  );
  console.log(`  ${"".padEnd(16)} latency p50 ${latency.p50}  p90 ${latency.p90}  p99 ${latency.p99}`);
  console.log(
    `  ${"".padEnd(16)} RSS idle ${fmt(result.idleRss)} MiB, peak ${fmt(result.peakRss)} MiB ` +
      `(+${fmt(result.peakRss - result.idleRss)} MiB)`,
  );
  console.log(`  ${"".padEnd(16)} CPU ${result.cpu}`);
  const ms = (value: number) => value.toFixed(1);
  const { between, ...phases } = result.phaseMs;
  console.log(
    `  ${"".padEnd(16)} a flush (means): ${Object.entries(phases)
      .map(([phase, value]) => `${phase} ${ms(value)} ms`)
      .join(", ")}; between flushes ${ms(between)} ms`,
  );
  const slow = SLOW_FLUSH_SECONDS.map((le) => `${result.slowFlushes[le]} over ${Number(le) * 1000} ms`);
  console.log(`  ${"".padEnd(16)} ${fmt(result.flushCount)} flushes, ${slow.join(", ")}`);
  const parts = Object.entries(result.activeParts).map(([table, count]) => `${table} ${count}`);
  console.log(`  ${"".padEnd(16)} active parts after the load: ${parts.join(", ")}`);
  for (const warning of result.warnings.slice(0, 5)) console.log(`  ${"".padEnd(16)} logged: ${warning}`);
}

function printEngine(label: string, engine: EngineResult, rowsPerInsert: number): void {
  console.log(
    `  ${label.padEnd(16)} ${fmt(engine.rate)} rows/s (${fmt(engine.rows)} rows, ${fmt(rowsPerInsert)} per insert; ` +
      `RSS idle ${fmt(engine.idleRss)} MiB, peak ${fmt(engine.peakRss)} MiB, +${fmt(engine.peakRss - engine.idleRss)})`,
  );
}

/** http, mix, new: one load on a fresh service, against the engine at 10,000 rows an insert and at the flush size. */
async function runLoad(work: string, population: Population): Promise<void> {
  const bodiesFile = join(work, "bodies.jsonl");
  const bodyCount =
    population.shape === "new" ? Math.min(6000, Math.ceil((30_000 * SECONDS) / EVENTS_PER_BATCH)) : 1000;
  const bytesPerEvent = writeBodies(bodiesFile, bodyCount, population);
  // The engine's rate is measured on both sides of the load, so that a machine speeding up or slowing down
  // during the run moves the baseline with it.
  const before = engineBaseline(bodiesFile, join(work, "baseline-before"), BASELINE_ROWS_PER_INSERT);
  const service = await startService(join(work, "service"));
  const result = await drive(service, bodiesFile);
  await stop(service);
  const after = engineBaseline(bodiesFile, join(work, "baseline-after"), BASELINE_ROWS_PER_INSERT);
  const engineRate = (before.rate + after.rate) / 2;
  const flushSize = Math.max(1, Math.round(result.flushEvents));
  // As many rows as the service stored, so that its merges and memory are the engine's over the same work.
  const atFlushSize = engineBaseline(
    bodiesFile,
    join(work, "baseline-flush"),
    flushSize,
    Math.max(BASELINE_ROWS, result.acknowledged),
  );

  console.log(
    `bench ${MODE}: ${CONNECTIONS} connections, ${SECONDS} s, batches of ${EVENTS_PER_BATCH} events (~${Math.round(bytesPerEvent)} bytes each)`,
  );
  printLoad("service", result);
  printEngine("engine before", before, BASELINE_ROWS_PER_INSERT);
  printEngine("engine after", after, BASELINE_ROWS_PER_INSERT);
  console.log(`  engine baseline  ${fmt(engineRate)} rows/s, the mean of the two`);
  printEngine("engine, flushes", atFlushSize, flushSize);
  // A request waits at least for the insert of the flush it is in, so the engine's own slow inserts at this size
  // are a floor under the service's p99.
  console.log(
    `  ${"".padEnd(16)} an insert: p50 ${atFlushSize.p50Ms.toFixed(1)} ms, p99 ${atFlushSize.p99Ms.toFixed(1)} ms`,
  );
  console.log(`  ratio service/engine: ${(result.rate / engineRate).toFixed(2)}`);
  console.log(`  ratio service/engine at the service's flush size: ${(result.rate / atFlushSize.rate).toFixed(2)}`);
  printBounds(result, engineRate, atFlushSize);
}

/**
 * The most any service could reach in this run, as ratios to the engine at 10,000 rows an insert. A flush holds at
 * most the events in flight (connections × batch), and the embedded engine runs one query at a time, so a flush
 * cycle takes at least its inserts. Two bounds: the engine alone inserting the same events at the flush size, and
 * the service's own insert phases (persons, links, events) with no time for anything else. And for memory, what the
 * engine alone grew by over as many rows as the service stored, at the flush size.
 */
function printBounds(result: LoadResult, engineRate: number, atFlushSize: EngineResult): void {
  const insertMs = result.phaseMs.persons + result.phaseMs.links + result.phaseMs.events;
  const insertsOnly = result.flushEvents / (insertMs / 1000);
  console.log(
    `  bounds at this flush size: the engine alone ${(atFlushSize.rate / engineRate).toFixed(2)}; ` +
      `the service's inserts alone (${insertMs.toFixed(1)} ms a flush) ${fmt(insertsOnly)} events/s, ` +
      `${(insertsOnly / engineRate).toFixed(2)}; memory: the engine alone grew ` +
      `+${fmt(atFlushSize.peakRss - atFlushSize.idleRss)} MiB over the same rows, the service ` +
      `+${fmt(result.peakRss - result.idleRss)}`,
  );
}

/** Seeds `people` new visitors through a service of their own on `dataDir`, waits for its merges, and prints the rate. */
async function seedPopulation(dataDir: string, people: number): Promise<string[]> {
  const seeding = await startService(dataDir);
  const { ids, rate, tenths } = await seed(seeding.url, people);
  const settled = await settleMerges(seeding);
  await stop(seeding);
  const byTenth =
    people / 10 < TIMED_TENTH
      ? ""
      : `; by tenth: ${tenths.map(fmt).join(", ")} (last/first ×${(tenths.at(-1)! / tenths[0]!).toFixed(2)})`;
  console.log(`persons: ${fmt(people)} persons seeded through the service, ${fmt(rate)} new IDs/s${byTenth}`);
  console.log(`  merges after seeding settled in ${settled}`);
  return ids;
}

/**
 * persons: the same load over a small and a large known population, each cold (just restarted) and warm. The
 * machine's speed drifts between runs, so the populations take turns, `ROUNDS` times, in the order small, large,
 * then large, small, and each round's ratio compares runs minutes apart.
 */
async function runPersons(work: string): Promise<void> {
  const populations = [PEOPLE, LARGE_POPULATION];
  const root = KEPT_DATA ?? work;
  mkdirSync(root, { recursive: true });
  const bodiesFileFor = (people: number) => join(work, `bodies-${people}.jsonl`);
  const dataDirFor = (people: number) => join(root, `service-${people}`);
  for (const people of populations) {
    const idsFile = join(root, `ids-${people}.json`);
    let ids: string[];
    if (existsSync(idsFile)) {
      ids = JSON.parse(readFileSync(idsFile, "utf8")) as string[];
      console.log(`persons: ${fmt(people)} persons seeded by an earlier run, in ${dataDirFor(people)}`);
    } else {
      ids = await seedPopulation(dataDirFor(people), people);
      writeFileSync(idsFile, JSON.stringify(ids));
    }
    writeBodies(bodiesFileFor(people), 3000, { shape: "known", people, ids });
  }
  const rounds: Map<number, Record<Temperature, number>>[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    console.log(`round ${round} of ${ROUNDS}`);
    const rates = new Map<number, Record<Temperature, number>>();
    // ABBA: every other round runs the large population first, so a machine slowing (or speeding) over a round
    // does not always favour the same population.
    for (const people of round % 2 === 1 ? populations : populations.toReversed()) {
      const service = await startService(dataDirFor(people));
      const cold = await drive(service, bodiesFileFor(people));
      printLoad(`${fmt(people)} cold`, cold);
      const warm = await drive(service, bodiesFileFor(people));
      printLoad(`${fmt(people)} warm`, warm);
      await stop(service);
      rates.set(people, { cold: cold.rate, warm: warm.rate });
    }
    rounds.push(rates);
  }
  const engine = engineBaseline(bodiesFileFor(PEOPLE), join(work, "baseline"), BASELINE_ROWS_PER_INSERT);
  printEngine("engine baseline", engine, BASELINE_ROWS_PER_INSERT);
  for (const temperature of ["cold", "warm"] as const) {
    const ratios = rounds.map((rates) => rates.get(LARGE_POPULATION)![temperature] / rates.get(PEOPLE)![temperature]);
    const toEngine = (people: number) =>
      rounds.map((rates) => (rates.get(people)![temperature] / engine.rate).toFixed(2)).join("/");
    console.log(
      `  ${temperature}: ${fmt(LARGE_POPULATION)} vs ${fmt(PEOPLE)} known persons, by round: ` +
        `${ratios.map((ratio) => `×${ratio.toFixed(2)}`).join(", ")} ` +
        `(mean ×${(ratios.reduce((sum, ratio) => sum + ratio, 0) / ratios.length).toFixed(2)}; ` +
        `ratio to the engine ${toEngine(PEOPLE)} → ${toEngine(LARGE_POPULATION)})`,
    );
  }
}

ensureWrk();
const settings = Object.entries(TUNING).map(([name, value]) => `${name}=${value}`);
console.log(`service settings: ${settings.length > 0 ? settings.join(" ") : "defaults"}`);
const work = mkdtempSync(join(tmpdir(), "ingest-bench-"));
try {
  if (MODE === "persons") await runPersons(work);
  else await runLoad(work, { shape: MODE === "http" ? "known" : MODE, people: PEOPLE });
} finally {
  for (const service of running) await stop(service);
  rmSync(work, { recursive: true, force: true });
}
