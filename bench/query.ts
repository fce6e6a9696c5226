/**
 * `npm run bench query`: does reading the data slow its writing? The `http` load on a service with a query port,
 * in turns without and with a client that loops a heavy scan (a group-by over all events) on that port, A B B A
 * over `BENCH_ROUNDS` rounds; and the scan's own latency, quiet (no load) against under load. Targets: ingest
 * keeps at least 0.7 of its rate, and its p99 at most doubles.
 */
import { join } from "node:path";
import { drive, fmt, type LoadResult, latencyMs, printLoad, startService, stop } from "./harness";
import { PEOPLE, writeBodies } from "./workload";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PASSWORD = "bench-query";
/** A scan over every event, grouped by person: all of `events`, read on every loop. */
const HEAVY =
  "SELECT distinct_id, count() AS n, uniqExact(session_id) AS sessions FROM events GROUP BY distinct_id ORDER BY n DESC LIMIT 10";

/** Runs `HEAVY` on the query port until `stopped()`, and returns each run's milliseconds. */
async function scanLoop(url: string, stopped: () => boolean, times = Number.POSITIVE_INFINITY): Promise<number[]> {
  const took: number[] = [];
  while (!stopped() && took.length < times) {
    const started = performance.now();
    const response = await fetch(url, {
      method: "POST",
      body: HEAVY,
      headers: { authorization: `Basic ${btoa(`default:${PASSWORD}`)}` },
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`query port: ${response.status} ${text}`);
    took.push(performance.now() - started);
  }
  return took;
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
export async function runQuery(work: string): Promise<void> {
  const bodiesFile = join(work, "bodies.jsonl");
  writeBodies(bodiesFile, 1000, { shape: "known", people: PEOPLE });
  const service = await startService(join(work, "service"), { QUERY_PORT: "0", QUERY_PASSWORD: PASSWORD });
  const queryUrl = service.queryUrl!;
  try {
    const warmUp = await drive(service, bodiesFile); // and a table to scan
    printLoad("warm-up", warmUp);
    const quietBefore = await scanLoop(queryUrl, () => false, 5);
    const quiet: LoadResult[] = [];
    const loaded: LoadResult[] = [];
    const underLoad: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const withQueries of round % 2 === 1 ? [false, true] : [true, false]) {
        if (!withQueries) {
          const result = await drive(service, bodiesFile);
          printLoad(`round ${round}, no queries`, result);
          quiet.push(result);
          continue;
        }
        let done = false;
        const loop = scanLoop(queryUrl, () => done);
        const result = await drive(service, bodiesFile);
        done = true;
        const took = await loop;
        underLoad.push(...took);
        printLoad(`round ${round}, scans`, result);
        console.log(`  ${"".padEnd(16)} ${took.length} scans during the load, median ${fmt(median(took))} ms`);
        loaded.push(result);
      }
    }
    const quietAfter = await scanLoop(queryUrl, () => false, 5);
    const rates = quiet.map((result, i) => loaded[i]!.rate / result.rate);
    const p99s = quiet.map((result, i) => latencyMs(loaded[i]!.latency.p99) / latencyMs(result.latency.p99));
    const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
    console.log(
      `bench query: ingest with a scan looping on the query port, against without, by round: rate ` +
        `${rates.map((r) => `×${r.toFixed(2)}`).join(", ")} (mean ×${mean(rates).toFixed(2)}; target ≥ 0.7), p99 ` +
        `${p99s.map((r) => `×${r.toFixed(2)}`).join(", ")} (mean ×${mean(p99s).toFixed(2)}; target ≤ 2)`,
    );
    console.log(
      `  the scan: quiet ${fmt(median(quietBefore))} ms before the loads and ${fmt(median(quietAfter))} ms after ` +
        `(the table grew), ${fmt(median(underLoad))} ms under load (median of ${underLoad.length})`,
    );
  } finally {
    await stop(service);
  }
}
