/**
 * One load on a fresh service, against the engine alone inserting the same rows: at 10,000 rows an insert before
 * and after the load, and at the service's flush size. The `http`, `mix`, `new` and `web` modes of bench/load.ts.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  BASELINE_ROWS,
  BASELINE_ROWS_PER_INSERT,
  bestEngine,
  CONNECTIONS,
  drive,
  type EngineResult,
  engineBaseline,
  flushes,
  fmt,
  type LoadResult,
  printEngine,
  printLoad,
  SECONDS,
  type Service,
  startService,
  stop,
} from "./harness";
import { formatRowsPerEvent, type IdentityRows, rowsBetween } from "./rows";
import { EVENTS_PER_BATCH, JSON_POST, type Population, writeBodies } from "./workload";

/** A load: its request bodies, and what the service and wrk are given. */
export interface Load {
  readonly label: string;
  /** Writes the request bodies to `file`, one a line; returns the mean bytes per event. */
  readonly write: (file: string) => number;
  /** The service's settings for this load (over the user's). */
  readonly service?: Readonly<Record<string, string>>;
  /** bench/wrk.lua's options (BENCH_UNIQUE, BENCH_FORWARDED_FOR). */
  readonly wrk?: Readonly<Record<string, string>>;
  /**
   * Send the whole file once before the measured load, on the same service (`seedFromFile`): the figures are then
   * those of a service that has seen the population (persons known, caches warm: the steady state), and what
   * first sight cost is printed too.
   */
  readonly warmUpPass?: boolean;
}

/** A load of bench/workload.ts's synthetic posthog-node events over `population`. */
export function syntheticLoad(population: Population, label: string): Load {
  const bodies = population.shape === "new" ? Math.min(6000, Math.ceil((30_000 * SECONDS) / EVENTS_PER_BATCH)) : 1000;
  return { label, write: (file) => writeBodies(file, bodies, population) };
}

/** The load's passes on a fresh service on `dataDir`: the seeding (if it has a warm-up pass), then the measured load. */
export async function drivePasses(
  dataDir: string,
  load: Load,
  bodiesFile: string,
): Promise<{ readonly first: Seeded | undefined; readonly measured: LoadResult }> {
  const service = await startService(dataDir, { ...load.service });
  try {
    const first = load.warmUpPass ? await seedFromFile(service, bodiesFile) : undefined;
    return { first, measured: await drive(service, bodiesFile, load.wrk) };
  } finally {
    await stop(service);
  }
}

/** What sending the whole file once to a fresh service took: its rate, and the identity rows of first sight. */
export interface Seeded {
  readonly rate: number;
  readonly identityRows: IdentityRows;
}

/**
 * Sends every body of the file once, 16 requests at a time, each as it is (the file's events are unique): every
 * person of the load is then known to the service.
 */
export async function seedFromFile(service: Service, bodiesFile: string): Promise<Seeded> {
  const bodies = readFileSync(bodiesFile, "utf8")
    .split("\n")
    .filter((line) => line !== "");
  const before = await flushes(service);
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < bodies.length; i = next++) {
      const response = await fetch(`${service.url}/batch/`, { ...JSON_POST, body: bodies[i]! });
      if (!response.ok) throw new Error(`seeding: ${response.status} ${await response.text()}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  const seconds = (performance.now() - started) / 1000;
  const after = await flushes(service);
  const events = after.ingested - before.ingested;
  return { rate: events / seconds, identityRows: rowsBetween(before.rows, after.rows, events) };
}

/** The seeding, when there was one, and the measured load, each with the identity rows it wrote per event. */
export function printPasses(first: Seeded | undefined, measured: LoadResult): void {
  if (first) {
    console.log(`  seeding (the whole file once, people first seen): ${fmt(first.rate)} events/s`);
    console.log(`                   identity rows per event: ${formatRowsPerEvent(first.identityRows)}`);
  }
  printLoad(first ? "service, people seen" : "service", measured);
}

/** One load on a fresh service, against the engine at 10,000 rows an insert and at the flush size; its rate. */
export async function runLoad(work: string, load: Load): Promise<number> {
  mkdirSync(work, { recursive: true });
  const bodiesFile = join(work, "bodies.jsonl");
  const bytesPerEvent = load.write(bodiesFile);
  // The engine's best rate (one session or two at once) is measured on both sides of the load, so that a machine
  // speeding up or slowing down during the run moves the baseline with it.
  const before = bestEngine(bodiesFile, join(work, "baseline-before"), BASELINE_ROWS_PER_INSERT);
  const { first, measured: result } = await drivePasses(join(work, "service"), load, bodiesFile);
  const after = bestEngine(bodiesFile, join(work, "baseline-after"), BASELINE_ROWS_PER_INSERT);
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
    `bench ${load.label}: ${CONNECTIONS} connections, ${SECONDS} s, batches of ${EVENTS_PER_BATCH} events (~${Math.round(bytesPerEvent)} bytes each)`,
  );
  printPasses(first, result);
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
  return result.rate;
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
