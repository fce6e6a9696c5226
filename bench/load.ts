/**
 * `npm run bench [http|mix|new|persons|query|instances|geoip]`: the service as its own process on a fresh data directory, driven by
 * wrk (a separate load generator) with posthog-node-shaped batches of 100 events, against the engine's own
 * insert rate for the same rows, measured in the same run. Never part of .ci/run.
 *
 *   http     distinct IDs from 10,000 people, 2% $identify with $anon_distinct_id, $set and $set_once
 *   mix      identity-heavy: 20% $identify / $create_alias / $set events
 *   new      every event from a distinct ID never seen before (a busy public site), with a person each and personless
 *            (posthog-js's default), against known visitors in the same run
 *   persons  the http load over 10,000 and over 1,000,000 known persons (seeded through the service first),
 *            each measured cold (just restarted) and warm (right after)
 *   query    the http load with and without a client looping a heavy scan on the query port
 *   instances  the mix load over 1, 2 and 3 instances sharing one engine (its writable query port)
 *
 * The service's own settings pass through (e.g. FLUSH_LINGER_MS=0) and are printed first.
 * BENCH_SECONDS (30) and BENCH_CONNECTIONS (16) set the load; BENCH_PEOPLE (1,000,000) the large population of
 * `persons`, BENCH_ROUNDS (2) how many times its populations take turns, and BENCH_DATA=<dir> where it keeps
 * its seeded data for the next run. BENCH_PROFILE=<dir> writes the service's CPU profile there (Bun's
 * --cpu-prof-md). The CPU the service spent is printed per kind of thread: the JavaScript thread against the
 * engine's own threads.
 * wrk comes from Debian (`apt-get install wrk`); this script installs it when it can (as root), else says so.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runGeoIp } from "./geoip";
import {
  BASELINE_ROWS,
  BASELINE_ROWS_PER_INSERT,
  bestEngine,
  CONNECTIONS,
  drive,
  type EngineResult,
  engineBaseline,
  ensureWrk,
  fmt,
  type LoadResult,
  printEngine,
  printLoad,
  running,
  SECONDS,
  startService,
  stop,
  TUNING,
} from "./harness";
import { runImportBench } from "./import";
import { runInstances } from "./instances";
import { runPersons } from "./persons";
import { runQuery } from "./query";
import { EVENTS_PER_BATCH, PEOPLE, type Population, writeBodies } from "./workload";

const MODE = (process.argv[2] ?? "http") as
  | "http"
  | "mix"
  | "new"
  | "persons"
  | "query"
  | "instances"
  | "import"
  | "geoip";

/** http, mix, new: one load on a fresh service, against the engine at 10,000 rows an insert and at the flush size. */
async function runLoad(work: string, population: Population, label: string = MODE): Promise<number> {
  mkdirSync(work, { recursive: true });
  const bodiesFile = join(work, "bodies.jsonl");
  const bodyCount =
    population.shape === "new" ? Math.min(6000, Math.ceil((30_000 * SECONDS) / EVENTS_PER_BATCH)) : 1000;
  const bytesPerEvent = writeBodies(bodiesFile, bodyCount, population);
  // The engine's best rate (one session or two at once) is measured on both sides of the load, so that a machine
  // speeding up or slowing down during the run moves the baseline with it.
  const before = bestEngine(bodiesFile, join(work, "baseline-before"), BASELINE_ROWS_PER_INSERT);
  const service = await startService(join(work, "service"));
  const result = await drive(service, bodiesFile);
  await stop(service);
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
    `bench ${label}: ${CONNECTIONS} connections, ${SECONDS} s, batches of ${EVENTS_PER_BATCH} events (~${Math.round(bytesPerEvent)} bytes each)`,
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
  return result.rate;
}

/**
 * new: new visitors against known ones, in one run: each a fresh service, known visitors (the `http` load) first
 * and last, new visitors with a person each, and new visitors as posthog-js sends them by default
 * (`$process_person_profile: false`), printed as ratios to the known visitors' mean rate.
 */
async function runNewVisitors(work: string): Promise<void> {
  const known = { shape: "known", people: PEOPLE } as const;
  const first = await runLoad(join(work, "known-1"), known, "http (known visitors)");
  const profiles = await runLoad(join(work, "new"), { shape: "new", people: PEOPLE }, "new (a person each)");
  const personless = await runLoad(
    join(work, "personless"),
    { shape: "new", people: PEOPLE, personless: true },
    "new (personless)",
  );
  const last = await runLoad(join(work, "known-2"), known, "http (known visitors)");
  const baseline = (first + last) / 2;
  console.log(
    `new visitors against known ones (${fmt(baseline)} events/s): a person each ${(profiles / baseline).toFixed(2)}, ` +
      `personless ${(personless / baseline).toFixed(2)}`,
  );
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

if (MODE !== "import") ensureWrk();
const settings = Object.entries(TUNING).map(([name, value]) => `${name}=${value}`);
console.log(`service settings: ${settings.length > 0 ? settings.join(" ") : "defaults"}`);
const work = mkdtempSync(join(tmpdir(), "ingest-bench-"));
try {
  if (MODE === "persons") await runPersons(work);
  else if (MODE === "query") await runQuery(work);
  else if (MODE === "instances") await runInstances(work);
  else if (MODE === "import") await runImportBench(work);
  else if (MODE === "new") await runNewVisitors(work);
  else if (MODE === "geoip") await runGeoIp(work);
  else await runLoad(work, { shape: MODE === "http" ? "known" : MODE, people: PEOPLE });
} finally {
  for (const service of running) await stop(service);
  rmSync(work, { recursive: true, force: true });
}
