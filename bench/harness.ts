/**
 * Running the service under load: starting it as its own process, driving it with wrk, reading its metrics and
 * logs, the engine baselines it is compared with, and printing what a load did.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ENV_NAMES } from "../src/config";
import { type RunningService, rssMiB, startProcess } from "../test/helpers/process";
import { formatRowsPerEvent, type IdentityRows, type IdentityTable, rowsBetween, rowsInserted } from "./rows";
import { EVENTS_PER_BATCH, JSON_POST, KEY } from "./workload";

export const ROOT = join(import.meta.dir, "..");
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
/** Rows the engine baseline inserts, and how many an insert: fixed, so that runs compare. */
export const BASELINE_ROWS = 300_000;
export const BASELINE_ROWS_PER_INSERT = 10_000;

export function ensureWrk(): void {
  if (Bun.which("wrk")) return;
  if (process.getuid?.() === 0) {
    Bun.spawnSync(["apt-get", "install", "-y", "wrk"], { env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  }
  if (!Bun.which("wrk")) {
    console.error("bench: wrk is missing; install it with `apt-get install wrk` (Debian) and run again.");
    process.exit(1);
  }
}

/**
 * Waits, at most 180 s, until the service's active parts have not changed for 10 s: seeding writes a population
 * in under a minute and leaves merges behind, which the cold load right after would otherwise pay for. Returns
 * how long it waited.
 */
export async function settleMerges(service: Service): Promise<string> {
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
export function threadCpu(pid: number): Map<string, number> {
  const ticks = new Map<string, number>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${task}/stat`, "utf8");
    } catch {
      continue; // the thread ended
    }
    const name = task === String(pid) ? "javascript" : stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const kind = name.replace(/[\d_-]+$/, "").trim();
    ticks.set(kind, (ticks.get(kind) ?? 0) + cpuSecondsOf(stat));
  }
  return ticks;
}

/** User and system CPU seconds of a `/proc/…/stat` line. */
function cpuSecondsOf(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export function cpuSpent(before: Map<string, number>, after: Map<string, number>): string {
  const spent = [...after].map(([kind, seconds]) => [kind, seconds - (before.get(kind) ?? 0)] as const);
  const top = spent.filter(([, seconds]) => seconds >= 0.05).sort((a, b) => b[1] - a[1]);
  const total = spent.reduce((sum, [, seconds]) => sum + seconds, 0);
  return `${total.toFixed(1)} s: ${top.map(([kind, seconds]) => `${kind} ${seconds.toFixed(1)}`).join(", ")}`;
}

export interface Service extends RunningService {
  readonly metricsUrl: string;
  /** The query port's URL, when the service was started with one. */
  readonly queryUrl: string | undefined;
}

/** Services still running: stopped in the end however the bench ends, so none outlives it. */
export const running = new Set<Service>();

/** The service on `dataDir`, with the bench's settings, the user's (`TUNING`), then `extra`. */
export async function startService(dataDir: string, extra: Record<string, string> = {}): Promise<Service> {
  const profile = process.env.BENCH_PROFILE;
  const env = {
    PATH: process.env.PATH ?? "",
    HOST: "127.0.0.1",
    PORT: "0",
    METRICS_PORT: "0",
    DATA_DIR: dataDir,
    PUBLIC_API_KEYS: KEY,
    ...TUNING,
    ...extra,
  };
  const service = await startProcess(env, [
    process.execPath,
    ...(profile ? ["--cpu-prof-md", `--cpu-prof-dir=${profile}`] : []),
    "src/main.ts",
  ]);
  const queryUrl = service.started.query;
  const withMetrics = {
    ...service,
    metricsUrl: service.started.metrics ?? "",
    queryUrl,
  };
  running.add(withMetrics);
  return withMetrics;
}

/** Set by the bench itself; `CLICKHOUSE_*` are left out too, since they choose another database than the fresh
 * embedded one the baseline compares with. */
export const BENCH_OWNS = new Set(["PORT", "HOST", "METRICS_PORT", "DATA_DIR", "PUBLIC_API_KEYS"]);

/**
 * The service's settings the bench is run with (e.g. `FLUSH_LINGER_MS=0`, or caches that hold a whole large
 * population): every variable the service reads, except the bench's own, and the allocator's purge, which the
 * service sets for itself unless told (src/engine/restart.ts). Printed with the results, so that an A/B shows what
 * it compared.
 */
export const TUNING: Readonly<Record<string, string>> = Object.fromEntries(
  [...ENV_NAMES, "MIMALLOC_PURGE_DELAY"]
    .filter((name) => !BENCH_OWNS.has(name) && !name.startsWith("CLICKHOUSE_") && process.env[name])
    .map((name) => [name, process.env[name]!]),
);

export async function stop(service: Service): Promise<void> {
  running.delete(service);
  service.child.kill("SIGTERM");
  await service.child.exited;
}

export interface Histogram {
  readonly sum: number;
  readonly count: number;
}

export const PHASES = ["identity", "facts", "persons", "links", "events"] as const;

/** Flushes that took longer than these, counted from the duration histogram's buckets. */
export const SLOW_FLUSH_SECONDS = ["0.05", "0.1", "0.25"] as const;

/** The flush histograms the bench reads: sizes, durations, and durations by phase; and the tables' active parts. */
export interface Flushes {
  readonly size: Histogram;
  readonly seconds: Histogram;
  /** Flushes that took at most each of SLOW_FLUSH_SECONDS. */
  readonly within: Readonly<Record<(typeof SLOW_FLUSH_SECONDS)[number], number>>;
  readonly phases: Readonly<Record<(typeof PHASES)[number], Histogram>>;
  readonly activeParts: Readonly<Record<string, number>>;
  /** Events acknowledged so far. */
  readonly ingested: number;
  /** Body bytes of the requests in flight: none once every request sent was answered. */
  readonly pendingBytes: number;
  /** Rows inserted into each identity table so far. */
  readonly rows: Readonly<Record<IdentityTable, number>>;
}

/** The flush histograms, from the service's metrics. */
export async function flushes(service: Service): Promise<Flushes> {
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
    ingested: sample("ingest_events_ingested_total"),
    pendingBytes: sample("ingest_pending_bytes"),
    rows: rowsInserted(text),
  };
}

/** Mean per observation between two readings of a histogram. */
export const mean = (before: Histogram, after: Histogram): number =>
  (after.sum - before.sum) / (after.count - before.count);

export interface LoadResult {
  readonly rate: number;
  readonly acknowledged: number;
  readonly non2xx: number;
  readonly socketErrors: string;
  readonly latency: Record<string, string>;
  readonly idleRss: number;
  readonly peakRss: number;
  readonly cpu: string;
  /** The share of a core wrk used during the load: near 100 per thread, wrk would be what limits the rate. */
  readonly wrkCpuPercent: number;
  /** Mean events per flush during the load. */
  readonly flushEvents: number;
  /**
   * Mean milliseconds per flush in each phase, and between one flush and the next (answering, the clients):
   * negative where a flush began before the previous one had finished (its events still going in).
   */
  readonly phaseMs: Readonly<Record<(typeof PHASES)[number] | "between", number>>;
  /** Flushes during the load, and how many of them took longer than each of SLOW_FLUSH_SECONDS. */
  readonly flushCount: number;
  readonly slowFlushes: Readonly<Record<(typeof SLOW_FLUSH_SECONDS)[number], number>>;
  /** Active parts per table right after the load: merges keep up when these stay in the tens. */
  readonly activeParts: Readonly<Record<string, number>>;
  /** The service's warnings, errors and refusals during the load, grouped (see warningsIn). */
  readonly warnings: readonly string[];
  /** The identity rows inserted during the load, by table, and the events they came with (bench/rows.ts). */
  readonly identityRows: IdentityRows;
}

export function parseWrk(output: string) {
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

/** What wrk printed, and the share of a core it used while it loaded (the last SECONDS it ran). */
export interface WrkRun {
  readonly output: string;
  readonly cpuPercent: number;
}

/**
 * wrk posting the batches of `bodiesFile` for SECONDS over `connections`, to `url`, or with `ports`, one thread
 * per port on the URL's host (so that the connections are spread evenly over several services); `env` sets
 * bench/wrk.lua's options (BENCH_UNIQUE, BENCH_FORWARDED_FOR). Its CPU is sampled as it runs, so that a load
 * that asks much of wrk (BENCH_UNIQUE rewrites every event) shows whether wrk itself was short of CPU; the
 * window is the last SECONDS, after wrk's script read and split the bodies.
 */
export async function runWrk(
  url: string,
  bodiesFile: string,
  { connections = CONNECTIONS, ports = [] as readonly number[], env = {} as Readonly<Record<string, string>> } = {},
): Promise<WrkRun> {
  const threads = Math.max(2, ports.length);
  const wrk = Bun.spawn(
    [
      "wrk",
      `-t${threads}`,
      `-c${connections}`,
      `-d${SECONDS}s`,
      "--timeout",
      "30s",
      "--latency",
      "-s",
      join(ROOT, "bench", "wrk.lua"),
      url,
      "--",
      bodiesFile,
    ],
    { stdout: "pipe", stderr: "inherit", env: { ...process.env, ...env, BENCH_PORTS: ports.join(",") } },
  );
  const samples: { at: number; cpu: number }[] = [];
  const sampler = setInterval(() => {
    const cpu = processCpu(wrk.pid);
    if (cpu !== undefined) samples.push({ at: performance.now(), cpu });
  }, 250);
  const output = await new Response(wrk.stdout).text();
  await wrk.exited;
  clearInterval(sampler);
  const last = samples.at(-1);
  const first = samples.find((sample) => last && sample.at >= last.at - SECONDS * 1000);
  const cpuPercent =
    first && last && last.at > first.at ? (100 * (last.cpu - first.cpu)) / ((last.at - first.at) / 1000) : 0;
  return { output, cpuPercent };
}

/**
 * CPU seconds `pid` has used, all its threads, those that ended included (the process's own line, where a sum
 * of its threads' would drop wrk's as they end); undefined once it has ended.
 */
function processCpu(pid: number): number | undefined {
  try {
    return cpuSecondsOf(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return undefined;
  }
}

/**
 * Once wrk is done, the requests it left in flight still end: waits (at most 10 s) until the service holds none,
 * so that the events and rows read after a load are those of the same requests.
 */
async function answered(service: Service): Promise<Flushes> {
  const deadline = performance.now() + 10_000;
  let now = await flushes(service);
  while (now.pendingBytes > 0 && performance.now() < deadline) {
    await Bun.sleep(100);
    now = await flushes(service);
  }
  return now;
}

/**
 * Warms the service up (JIT, first parts), then drives it with wrk for SECONDS while sampling its RSS and CPU;
 * `wrkEnv` sets bench/wrk.lua's options.
 */
export async function drive(
  service: Service,
  bodiesFile: string,
  wrkEnv: Readonly<Record<string, string>> = {},
): Promise<LoadResult> {
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
  const wrk = await runWrk(service.url, bodiesFile, { env: wrkEnv }); // async, so the RSS sampler keeps running
  clearInterval(sampler);
  const cpu = cpuSpent(cpuBefore, threadCpu(pid));
  const after = await flushes(service);
  const settled = await answered(service);
  const result = parseWrk(wrk.output);
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
    wrkCpuPercent: wrk.cpuPercent,
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
    identityRows: rowsBetween(before.rows, settled.rows, settled.ingested - before.ingested),
  };
}

/**
 * The warnings and errors the service logged, and the requests it refused, as "count × message (status, code,
 * reason, cause)", most first.
 */
export function warningsIn(logged: string): string[] {
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

export interface EngineResult {
  /** Sessions inserting at once. */
  readonly sessions: number;
  readonly rows: number;
  readonly rate: number;
  readonly idleRss: number;
  readonly peakRss: number;
  /** One insert's time, median and 99th percentile (ms). */
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** The engine's own insert rate for the rows of `bodiesFile`, `rowsPerInsert` at a time, in a process of its own. */
export function engineBaseline(
  bodiesFile: string,
  dataDir: string,
  rowsPerInsert: number,
  rows = BASELINE_ROWS,
  sessions = 1,
): EngineResult {
  const script = join(ROOT, "bench", "engine-baseline.ts");
  const args = [bodiesFile, `${dataDir}-${sessions}`, String(rows), String(rowsPerInsert), String(sessions)];
  const run = Bun.spawnSync([process.execPath, script, ...args], { cwd: ROOT, stdout: "pipe", stderr: "inherit" });
  return { ...(JSON.parse(run.stdout.toString()) as Omit<EngineResult, "sessions">), sessions };
}

/**
 * The engine's best rate on this machine at `rowsPerInsert`: inserting on one session, or on two at once (which
 * overlaps the fixed costs of inserts when nothing else needs the cores).
 */
export function bestEngine(bodiesFile: string, dataDir: string, rowsPerInsert: number): EngineResult {
  const [one, two] = [1, 2].map((sessions) =>
    engineBaseline(bodiesFile, dataDir, rowsPerInsert, BASELINE_ROWS, sessions),
  );
  return two!.rate > one!.rate ? two! : one!;
}

export const fmt = (n: number) => Math.round(n).toLocaleString("en");

/** The mean of a run's rounds (rates or ratios). */
export const average = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

/** A latency as wrk prints it (`812.5us`, `43.2ms`, `1.08s`), in milliseconds. */
export function latencyMs(text: string | undefined): number {
  const match = /^([\d.]+)(us|ms|s)$/.exec(text ?? "");
  if (!match) return Number.NaN;
  return Number(match[1]) * { us: 0.001, ms: 1, s: 1000 }[match[2] as "us" | "ms" | "s"];
}

export function printLoad(label: string, result: LoadResult): void {
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
  console.log(`  ${"".padEnd(16)} CPU ${result.cpu}; wrk ${result.wrkCpuPercent.toFixed(0)}% of a core`);
  const ms = (value: number) => value.toFixed(1);
  const { between, ...phases } = result.phaseMs;
  console.log(
    `  ${"".padEnd(16)} a flush (means): ${Object.entries(phases)
      .map(([phase, value]) => `${phase} ${ms(value)} ms`)
      .join(", ")}; ${between >= 0 ? `between flushes ${ms(between)} ms` : `flushes overlapped by ${ms(-between)} ms`}`,
  );
  const slow = SLOW_FLUSH_SECONDS.map((le) => `${result.slowFlushes[le]} over ${Number(le) * 1000} ms`);
  console.log(`  ${"".padEnd(16)} ${fmt(result.flushCount)} flushes, ${slow.join(", ")}`);
  const parts = Object.entries(result.activeParts).map(([table, count]) => `${table} ${count}`);
  console.log(`  ${"".padEnd(16)} active parts after the load: ${parts.join(", ")}`);
  const rows = formatRowsPerEvent(result.identityRows);
  console.log(`  ${"".padEnd(16)} identity rows per event: ${rows}`);
  for (const warning of result.warnings.slice(0, 5)) console.log(`  ${"".padEnd(16)} logged: ${warning}`);
}

export function printEngine(label: string, engine: EngineResult, rowsPerInsert: number): void {
  const sessions = engine.sessions > 1 ? `, ${engine.sessions} sessions` : "";
  console.log(
    `  ${label.padEnd(16)} ${fmt(engine.rate)} rows/s (${fmt(engine.rows)} rows, ${fmt(rowsPerInsert)} per insert${sessions}; ` +
      `RSS idle ${fmt(engine.idleRss)} MiB, peak ${fmt(engine.peakRss)} MiB, +${fmt(engine.peakRss - engine.idleRss)})`,
  );
}
