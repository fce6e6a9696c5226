/**
 * `npm run bench instances`: what several instances over one engine cost. One engine (a service's query port in
 * writable mode, its own ingest idle) and 1, 2 or 3 service instances over it (`CLICKHOUSE_URL`), driven by one wrk
 * with the `mix` load (20% identity events over shared people), its connections spread evenly over the instances;
 * each load on a fresh database, the counts taking turns (1 2 3, then 3 2 1, for `BENCH_ROUNDS` rounds). Printed:
 * each load, then the rate and p99 of 2 and 3 instances against 1, round by round. On 2 cores every process shares
 * the same cores, so this measures the cost of coordination (reads of other writers' facts, no person cache), not
 * scale-out.
 */
import { join } from "node:path";
import { rssMiB } from "../test/helpers/process";
import {
  average,
  CONNECTIONS,
  flushes,
  fmt,
  type Histogram,
  latencyMs,
  mean,
  PHASES,
  parseWrk,
  runWrk,
  type Service,
  startService,
  stop,
  threadCpu,
  warningsIn,
} from "./harness";
import { EVENTS_PER_BATCH, JSON_POST, PEOPLE, writeBodies } from "./workload";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const COUNTS = [1, 2, 3] as const;
const PASSWORD = "bench-instances";
/** The same connections for every count, spread evenly: a multiple of 2 and 3 near BENCH_CONNECTIONS. */
const SPREAD_CONNECTIONS = Math.max(6, 6 * Math.round(CONNECTIONS / 6));

interface InstancesResult {
  readonly rate: number;
  readonly non2xx: number;
  readonly latency: Record<string, string>;
  readonly flushEvents: number;
  /** Mean ms a flush spends in each phase, over every instance's flushes. */
  readonly phaseMs: Readonly<Record<(typeof PHASES)[number], number>>;
  /** CPU seconds spent during the load by the engine's process and by the instances together. */
  readonly cpu: { readonly engine: number; readonly instances: number };
  readonly engineRss: number;
  readonly warnings: readonly string[];
}

const cpuSeconds = (pid: number) => [...threadCpu(pid).values()].reduce((sum, seconds) => sum + seconds, 0);
const sum = (histograms: readonly Histogram[]): Histogram => ({
  sum: histograms.reduce((total, h) => total + h.sum, 0),
  count: histograms.reduce((total, h) => total + h.count, 0),
});

/** Warms each instance up, then drives them all at once with one wrk. */
async function driveAll(engine: Service, instances: readonly Service[], bodiesFile: string): Promise<InstancesResult> {
  const warmUps = (await Bun.file(bodiesFile).text()).split("\n", 5);
  for (const instance of instances) {
    for (const body of warmUps) {
      const response = await fetch(`${instance.url}/batch/`, { ...JSON_POST, body });
      if (!response.ok) throw new Error(`warm-up: ${response.status} ${await response.text()}`);
    }
  }
  const before = await Promise.all(instances.map(flushes));
  const logged = instances.map((instance) => instance.output().lastIndexOf("\n") + 1);
  const cpuBefore = { engine: cpuSeconds(engine.child.pid), instances: instances.map((i) => cpuSeconds(i.child.pid)) };
  let engineRss = rssMiB(engine.child.pid);
  const sampler = setInterval(() => {
    engineRss = Math.max(engineRss, rssMiB(engine.child.pid));
  }, 250);
  const ports = instances.map((instance) => Number(new URL(instance.url).port));
  const { output } = await runWrk(instances[0]!.url, bodiesFile, { connections: SPREAD_CONNECTIONS, ports });
  clearInterval(sampler);
  const cpu = {
    engine: cpuSeconds(engine.child.pid) - cpuBefore.engine,
    instances: instances.reduce((total, i, n) => total + cpuSeconds(i.child.pid) - cpuBefore.instances[n]!, 0),
  };
  const after = await Promise.all(instances.map(flushes));
  const wrk = parseWrk(output);
  const over = (pick: (f: Awaited<ReturnType<typeof flushes>>) => Histogram) =>
    mean(sum(before.map(pick)), sum(after.map(pick)));
  return {
    rate: ((wrk.requests - wrk.non2xx) * EVENTS_PER_BATCH) / wrk.seconds,
    non2xx: wrk.non2xx,
    latency: wrk.latency,
    flushEvents: over((f) => f.size),
    phaseMs: Object.fromEntries(PHASES.map((phase) => [phase, 1000 * over((f) => f.phases[phase])])) as Record<
      (typeof PHASES)[number],
      number
    >,
    cpu,
    engineRss,
    warnings: instances.flatMap((instance, n) => warningsIn(instance.output().slice(logged[n]))),
  };
}

function printResult(label: string, result: InstancesResult): void {
  const pad = "".padEnd(22);
  console.log(
    `  ${label.padEnd(22)} ${fmt(result.rate)} events/s acknowledged (${result.non2xx} non-2xx; ` +
      `${fmt(result.flushEvents)} events a flush)`,
  );
  console.log(`  ${pad} latency p50 ${result.latency.p50}  p90 ${result.latency.p90}  p99 ${result.latency.p99}`);
  console.log(
    `  ${pad} a flush (means): ${PHASES.map((phase) => `${phase} ${result.phaseMs[phase].toFixed(1)} ms`).join(", ")}`,
  );
  console.log(
    `  ${pad} CPU: engine ${result.cpu.engine.toFixed(1)} s, instances ${result.cpu.instances.toFixed(1)} s; ` +
      `engine RSS peak ${fmt(result.engineRss)} MiB`,
  );
  for (const warning of result.warnings.slice(0, 5)) console.log(`  ${pad} logged: ${warning}`);
}

export async function runInstances(work: string): Promise<void> {
  const bodiesFile = join(work, "bodies.jsonl");
  writeBodies(bodiesFile, 1000, { shape: "mix", people: PEOPLE });
  const engine = await startService(join(work, "engine"), {
    QUERY_PORT: "0",
    QUERY_PASSWORD: PASSWORD,
    QUERY_READONLY: "0",
    QUERY_CONCURRENCY: "64",
  });
  console.log(
    `bench instances: the mix load, ${SPREAD_CONNECTIONS} connections spread over the instances, batches of ` +
      `${EVENTS_PER_BATCH} events, over one engine's writable query port`,
  );
  const results = new Map<number, InstancesResult[]>(COUNTS.map((count) => [count, []]));
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const count of round % 2 === 1 ? COUNTS : [...COUNTS].reverse()) {
        const env = {
          CLICKHOUSE_URL: engine.queryUrl!,
          CLICKHOUSE_PASSWORD: PASSWORD,
          CLICKHOUSE_DATABASE: `bench_${count}_${round}`,
        };
        const instances: Service[] = [];
        try {
          for (let n = 0; n < count; n++) instances.push(await startService(join(work, `unused-${n}`), env));
          const result = await driveAll(engine, instances, bodiesFile);
          printResult(`round ${round}, ${count} instance${count > 1 ? "s" : ""}`, result);
          results.get(count)!.push(result);
        } finally {
          for (const instance of instances) await stop(instance);
        }
      }
    }
  } finally {
    await stop(engine);
  }
  const one = results.get(1)!;
  for (const count of [2, 3]) {
    const rates = results.get(count)!.map((result, round) => result.rate / one[round]!.rate);
    const p99s = results
      .get(count)!
      .map((result, round) => latencyMs(result.latency.p99) / latencyMs(one[round]!.latency.p99));
    console.log(
      `bench instances: ${count} instances against 1, by round: rate ${rates.map((r) => `×${r.toFixed(2)}`).join(", ")} ` +
        `(mean ×${average(rates).toFixed(2)}), p99 ${p99s.map((r) => `×${r.toFixed(2)}`).join(", ")} (mean ×${average(p99s).toFixed(2)})`,
    );
  }
}
