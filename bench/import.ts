/**
 * `npm run bench import`: `ingest import` of BENCH_IMPORT_EVENTS (1,000,000) posthog-node-shaped events (2%
 * `$identify`, 10,000 people) from one gzip file of JSON lines, in process on a fresh data directory and through
 * a running service, against the engine alone inserting the same rows into the service's tables (the sessions
 * view included) at its best insert size, measured in the same run, before and after. Peak resident memory of
 * each process, against the service's idle. Each import is a process of its own, as a user runs it.
 */
import { join } from "node:path";
import { normalize } from "../src/capture/normalize";
import { timestampFromDate } from "../src/capture/timestamp";
import { personIdFor } from "../src/identity";
import { runImport } from "../src/import";
import { eventRow } from "../src/write/rows";
import { random } from "../test/helpers/identity-model";
import { rssMiB } from "../test/helpers/process";
import { BASELINE_ROWS, type EngineResult, engineBaseline, fmt, ROOT, startService, stop } from "./harness";
import { body, event, KEY, PEOPLE, START } from "./workload";

const EVENTS = Number(process.env.BENCH_IMPORT_EVENTS ?? 1_000_000);
const INSERT_SIZES = [10_000, 50_000, 200_000];
const BATCH_SIZE = process.env.BENCH_IMPORT_BATCH;

interface ImportRun {
  readonly rate: number;
  readonly seconds: number;
  readonly peakRss: number;
  readonly summary: Record<string, unknown>;
}

export async function runImportBench(work: string): Promise<void> {
  const file = join(work, "history.jsonl.gz");
  const bodies = join(work, "bodies.jsonl");
  const bytes = await writeHistory(file, bodies);
  console.log(
    `bench import: ${fmt(EVENTS)} events (${PEOPLE} people, 2% $identify) in ${fmt(bytes.raw / 2 ** 20)} MiB of JSON lines, ${fmt(bytes.gzip / 2 ** 20)} MiB gzip`,
  );

  const sweep = INSERT_SIZES.flatMap((size) => [1, 2].map((sessions) => ({ size, sessions })));
  const before = sweep.map(({ size, sessions }) => ({
    size,
    result: engineBaseline(bodies, join(work, `engine-${size}`), size, EVENTS, sessions),
  }));
  for (const { size, result } of before) printEngine(`engine, ${fmt(size)} rows an insert`, result);
  const best = before.reduce((a, b) => (b.result.rate > a.result.rate ? b : a));

  const ceiling = await encodingCeiling(file);
  console.log(
    `  the import's own work alone (read, inflate, parse, check, normalize, encode the rows; no identity, no engine): ${fmt(ceiling)} events/s`,
  );

  // no query port (bench/rows.ts): the import is measured as a user runs it
  const idle = await startService(join(work, "idle"));
  await Bun.sleep(2000);
  const idleRss = rssMiB(idle.child.pid);
  await stop(idle);
  console.log(`  service idle: ${fmt(idleRss)} MiB`);

  const direct = await importing(["--data-dir", join(work, "direct")], file, work);
  printImport("import, in process", direct, idleRss);

  const service = await startService(join(work, "service"));
  const servicePeak = peakOf(service.child.pid);
  const viaService = await importing(["--url", service.url, "--api-key", KEY], file, work);
  const serviceRss = servicePeak.stop();
  await stop(service);
  printImport("import, via service", viaService, idleRss);
  console.log(`  ${"".padEnd(22)} the service: peak ${fmt(serviceRss)} MiB (+${fmt(serviceRss - idleRss)})`);

  const after = engineBaseline(bodies, join(work, "engine-after"), best.size, EVENTS, best.result.sessions);
  printEngine(`engine after, ${fmt(best.size)} rows an insert`, after);
  const engineRate = (best.result.rate + after.rate) / 2;
  console.log(`  engine baseline ${fmt(engineRate)} rows/s (best size, mean of before and after)`);
  console.log(
    `  ratio in process/engine: ${(direct.rate / engineRate).toFixed(2)} (target 0.5; the import's own work alone: ${(ceiling / engineRate).toFixed(2)})`,
  );
  console.log(`  ratio via service/engine: ${(viaService.rate / engineRate).toFixed(2)}`);
  console.log(
    `  memory: in process +${fmt(direct.peakRss - idleRss)} MiB over the service's idle, via service: the service +${fmt(serviceRss - idleRss)}, the importer ${fmt(viaService.peakRss)} MiB (target: +300)`,
  );
}

/**
 * The history as `ingest import` reads it, one event a line, gzip; and its first events as `/batch/` bodies, which
 * the engine baseline converts to rows (at most BASELINE_ROWS, inserted again from the start for longer runs).
 */
async function writeHistory(file: string, bodies: string): Promise<{ raw: number; gzip: number }> {
  const rng = random(20261124);
  const lines: string[] = [];
  const batches: string[] = [];
  let batch: object[] = [];
  for (let i = 0; i < EVENTS; i++) {
    const item = event(rng, START + i * 100, { shape: "known", people: PEOPLE });
    lines.push(JSON.stringify(item));
    if (i < BASELINE_ROWS) {
      batch.push(item);
      if (batch.length === 100) {
        batches.push(body(batch));
        batch = [];
      }
    }
  }
  const text = `${lines.join("\n")}\n`;
  const gzip = Bun.gzipSync(text);
  await Bun.write(file, gzip);
  await Bun.write(bodies, `${batches.join("\n")}\n`);
  return { raw: text.length, gzip: gzip.length };
}

/**
 * How fast this process does what the import does to each event besides identity and the engine's own work:
 * read and inflate the file, parse and check each line, normalize the event, make its row and encode it as the
 * insert would (JSONCompactEachRow). All of it runs on the one JavaScript thread, so it bounds the import's rate.
 */
async function encodingCeiling(file: string): Promise<number> {
  let encoded = 0;
  const summary = await runImport({
    files: [file],
    target: {
      async send(events) {
        const receivedAt = timestampFromDate(new Date());
        for (const { accepted } of events) {
          const captured = normalize(accepted, receivedAt);
          const row = eventRow(captured, personIdFor(captured.distinctId));
          encoded += JSON.stringify(Object.values(row)).length;
        }
        return { dropped: 0, retries: 0 };
      },
      async close() {},
    },
    batchSize: 10_000,
    inFlight: 2,
    maxLineBytes: 20 * 2 ** 20,
    strict: true,
  });
  if (encoded === 0) throw new Error("nothing encoded");
  return summary.eventsPerSecond;
}

/** Runs `ingest import` on the file with `args`, sampling its memory. */
async function importing(args: readonly string[], file: string, work: string): Promise<ImportRun> {
  const child = Bun.spawn(
    [
      process.execPath,
      "src/main.ts",
      "import",
      "--checkpoint",
      join(work, `checkpoint-${Date.now()}.json`),
      ...(BATCH_SIZE !== undefined ? ["--batch-size", BATCH_SIZE] : []),
      ...args,
      file,
    ],
    { cwd: ROOT, env: { PATH: process.env.PATH ?? "", PUBLIC_API_KEYS: KEY }, stdout: "pipe", stderr: "inherit" },
  );
  const peak = peakOf(child.pid);
  const [stdout, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
  const peakRss = peak.stop();
  if (code !== 0) throw new Error(`ingest import exited ${code}: ${stdout}`);
  const summary = JSON.parse(stdout) as { imported: number; seconds: number };
  return { rate: summary.imported / summary.seconds, seconds: summary.seconds, peakRss, summary };
}

/** Samples a process's resident memory every 100 ms; `stop` gives the highest seen. */
function peakOf(pid: number): { stop(): number } {
  let peak = 0;
  const sample = () => {
    try {
      const rss = rssMiB(pid);
      if (rss > peak) peak = rss;
    } catch {
      // gone
    }
  };
  sample();
  const timer = setInterval(sample, 100);
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}

function printEngine(label: string, result: EngineResult): void {
  console.log(
    `  ${label.padEnd(40)} ${fmt(result.rate)} rows/s on ${result.sessions} session(s), RSS +${fmt(result.peakRss - result.idleRss)} MiB`,
  );
}

function printImport(label: string, run: ImportRun, idleRss: number): void {
  console.log(
    `  ${label.padEnd(22)} ${fmt(run.rate)} events/s, ${run.seconds.toFixed(1)} s, peak ${fmt(run.peakRss)} MiB (+${fmt(run.peakRss - idleRss)} over the service's idle); ${JSON.stringify(run.summary.rejected)} rejected`,
  );
}
