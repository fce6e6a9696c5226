/**
 * `npm run bench query`: does reading the data slow its writing? The `http` load on a service with a query port,
 * in turns without and with queries on that port, A B B A over `BENCH_ROUNDS` rounds, for two kinds of queries: a
 * client that loops a heavy scan (a group-by over all events), and a flood of `FLOOD` clients each looping a query
 * that sleeps (every place taken, the rest waiting or refused); and the scan's own latency, quiet (no load)
 * against under load. Targets: ingest keeps at least 0.7 of its rate, and its p99 at most doubles.
 */
import { join } from "node:path";
import { average, drive, fmt, type LoadResult, latencyMs, printLoad, startService, stop } from "./harness";
import { PEOPLE, writeBodies } from "./workload";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PASSWORD = "bench-query";
/** A scan over every event, grouped by person: all of `events`, read on every loop. */
const HEAVY =
  "SELECT distinct_id, count() AS n, uniqExact(session_id) AS sessions FROM events GROUP BY distinct_id ORDER BY n DESC LIMIT 10";

/** Clients of the flood, each looping `SLEEP`: more than the port's places and its waiting line together. */
const FLOOD = 70;
const SLEEP = "SELECT sleep(2)";
const REFUSED_BACKOFF_MS = 100;
/** Which query loads run (`scan`, `flood`; both by default). */
const KINDS = (process.env.BENCH_QUERIES ?? "scan,flood").split(",");

/**
 * Runs `sql` on the query port until `stopped()`, and returns each answered run's milliseconds; with `refusals`
 * counted, a refused one (no place free) is tried again, as a client would.
 */
async function queryLoop(
  url: string,
  sql: string,
  stopped: () => boolean,
  times = Number.POSITIVE_INFINITY,
  refusals?: { count: number },
): Promise<number[]> {
  const took: number[] = [];
  while (!stopped() && took.length < times) {
    const started = performance.now();
    const response = await fetch(url, {
      method: "POST",
      body: sql,
      headers: { authorization: `Basic ${btoa(`default:${PASSWORD}`)}` },
    });
    const text = await response.text();
    if (refusals && response.headers.get("x-clickhouse-exception-code") === "202") {
      refusals.count++;
      await Bun.sleep(REFUSED_BACKOFF_MS); // as a client backs off before it tries again
    } else if (!response.ok) throw new Error(`query port: ${response.status} ${text}`);
    else took.push(performance.now() - started);
  }
  return took;
}

/**
 * The load without and with `queries` running beside it, A B B A over `ROUNDS` rounds, and the ratios of its rate
 * and p99; `queries` runs until told to stop and says what it did.
 */
async function compare(
  service: Parameters<typeof drive>[0],
  bodiesFile: string,
  name: string,
  queries: (stopped: () => boolean) => Promise<string>,
): Promise<void> {
  const quiet: LoadResult[] = [];
  const loaded: LoadResult[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const withQueries of round % 2 === 1 ? [false, true] : [true, false]) {
      if (!withQueries) {
        const result = await drive(service, bodiesFile);
        printLoad(`round ${round}, no queries`, result);
        quiet.push(result);
        continue;
      }
      let done = false;
      const running = queries(() => done);
      const result = await drive(service, bodiesFile);
      done = true;
      const said = await running;
      printLoad(`round ${round}, ${name}`, result);
      console.log(`  ${"".padEnd(16)} ${said}`);
      loaded.push(result);
    }
  }
  const rates = quiet.map((result, i) => loaded[i]!.rate / result.rate);
  const p99s = quiet.map((result, i) => latencyMs(loaded[i]!.latency.p99) / latencyMs(result.latency.p99));
  console.log(
    `bench query: ingest with ${name} on the query port, against without, by round: rate ` +
      `${rates.map((r) => `×${r.toFixed(2)}`).join(", ")} (mean ×${average(rates).toFixed(2)}; target ≥ 0.7), p99 ` +
      `${p99s.map((r) => `×${r.toFixed(2)}`).join(", ")} (mean ×${average(p99s).toFixed(2)}; target ≤ 2)`,
  );
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
    if (KINDS.includes("scan")) await scans(service, bodiesFile, queryUrl);
    if (KINDS.includes("flood")) {
      await compare(service, bodiesFile, `a flood of ${FLOOD} clients`, async (stopped) => {
        const refusals = { count: 0 };
        const loops = Array.from({ length: FLOOD }, () => queryLoop(queryUrl, SLEEP, stopped, Infinity, refusals));
        const answered = (await Promise.all(loops)).flat().length;
        return `${answered} sleeps answered, ${refusals.count} refused (no place free) during the load`;
      });
    }
  } finally {
    await stop(service);
  }
}

/** The scan looping beside the load, and its own latency quiet and under load. */
async function scans(service: Parameters<typeof drive>[0], bodiesFile: string, queryUrl: string): Promise<void> {
  const quietBefore = await queryLoop(queryUrl, HEAVY, () => false, 5);
  const underLoad: number[] = [];
  await compare(service, bodiesFile, "scans", async (stopped) => {
    const took = await queryLoop(queryUrl, HEAVY, stopped);
    underLoad.push(...took);
    return `${took.length} scans during the load, median ${fmt(median(took))} ms`;
  });
  const quietAfter = await queryLoop(queryUrl, HEAVY, () => false, 5);
  console.log(
    `  the scan: quiet ${fmt(median(quietBefore))} ms before the loads and ${fmt(median(quietAfter))} ms after ` +
      `(the table grew), ${fmt(median(underLoad))} ms under load (median of ${underLoad.length})`,
  );
}
