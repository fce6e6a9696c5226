// The engine's own insert rate for the rows a batch file becomes: events converted exactly as the service
// converts them, `total` rows inserted `rowsPerInsert` rows at a time through @clickhouse/client into a fresh
// embedded engine, with its resident memory sampled while it inserts. Run as its own process by bench/load.ts
// (chDB binds one data directory per process). Prints rows/s, RSS (MiB) and the median and 99th percentile of an
// insert's time as JSON.
import { normalize } from "../src/capture/normalize";
import { timestampFromDate } from "../src/capture/timestamp";
import { acceptEvents } from "../src/capture/validate";
import { loadConfig } from "../src/config";
import { ClickHouse } from "../src/storage/clickhouse";
import { tuneEmbeddedEngine } from "../src/storage/embedded/tuning";
import { personIdFor } from "../src/storage/identity";
import { eventRow } from "../src/storage/rows";
import { createSchema } from "../src/storage/schema";
import { rssMiB } from "../test/helpers/process";

const [bodiesFile, dataDir] = [process.argv[2]!, process.argv[3]!];
const [total, rowsPerInsert] = [Number(process.argv[4]), Number(process.argv[5] ?? 10_000)];
const lines = (await Bun.file(bodiesFile).text()).split("\n").filter((line) => line !== "");
const receivedAt = timestampFromDate(new Date());
// At most this many rows are built (and held) at once; a longer run inserts them again, from the start.
const BUILT_ROWS = 300_000;
const rows = [];
for (let i = 0; rows.length < Math.min(total, BUILT_ROWS); i++) {
  const { events } = acceptEvents((JSON.parse(lines[i % lines.length]!) as { batch: unknown[] }).batch);
  for (const event of events) {
    const captured = normalize(event, receivedAt);
    rows.push(eventRow(captured, personIdFor(captured.distinctId)));
  }
}
// The same storage settings as the service under test (bench/load.ts passes FSYNC through to both).
const config = loadConfig({ DATA_DIR: dataDir, CLICKHOUSE_DATABASE: "baseline", FSYNC: process.env.FSYNC });
const db = await ClickHouse.connect(config.clickhouse);
await createSchema(db);
if (config.clickhouse.kind === "embedded") await tuneEmbeddedEngine(db, config.clickhouse.fsync);
await db.insert("events", rows.slice(0, rowsPerInsert)); // warm up
Bun.gc(true);
const idleRss = rssMiB(process.pid);
let peakRss = idleRss;
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, rssMiB(process.pid));
}, 100);
const insertMs: number[] = [];
const started = performance.now();
for (let done = 0; done < total; done += rowsPerInsert) {
  const start = done % rows.length;
  const insert = rows.slice(start, start + rowsPerInsert);
  if (insert.length < rowsPerInsert) insert.push(...rows.slice(0, rowsPerInsert - insert.length));
  const began = performance.now();
  await db.insert("events", insert);
  insertMs.push(performance.now() - began);
}
const seconds = (performance.now() - started) / 1000;
clearInterval(sampler);
await db.close();
insertMs.sort((a, b) => a - b);
const quantile = (q: number) => insertMs[Math.min(insertMs.length - 1, Math.floor(q * insertMs.length))]!;
console.log(
  JSON.stringify({
    rows: total,
    seconds,
    rate: total / seconds,
    idleRss,
    peakRss,
    p50Ms: quantile(0.5),
    p99Ms: quantile(0.99),
  }),
);
