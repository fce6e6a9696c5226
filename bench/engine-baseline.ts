// The engine's own insert rate for the rows a batch file becomes: events converted exactly as the service
// converts them, `total` rows inserted `rowsPerInsert` rows at a time through @clickhouse/client into a fresh
// embedded engine, on `sessions` sessions at once (chDB runs one query at a time per session, and sessions on
// one directory in parallel), with its resident memory sampled while it inserts. Run as its own process by
// bench/load.ts (chDB binds one data directory per process). Prints rows/s, RSS (MiB) and the median and 99th
// percentile of an insert's time as JSON.
import { normalize } from "../src/capture/normalize";
import { timestampFromDate } from "../src/capture/timestamp";
import { acceptEvents } from "../src/capture/validate";
import { loadConfig } from "../src/config";
import { personIdFor } from "../src/identity";
import { ClickHouse } from "../src/storage/clickhouse";
import { createSchema } from "../src/storage/schema";
import { tuneEmbeddedEngine } from "../src/storage/tuning";
import { type EventRow, eventRow } from "../src/write/rows";
import { rssMiB } from "../test/helpers/process";

const [bodiesFile, dataDir] = [process.argv[2]!, process.argv[3]!];
const [total, rowsPerInsert] = [Number(process.argv[4]), Number(process.argv[5] ?? 10_000)];
const sessions = Number(process.argv[6] ?? 1);
const lines = (await Bun.file(bodiesFile).text()).split("\n").filter((line) => line !== "");
const receivedAt = timestampFromDate(new Date());
// At most this many rows are built (and held) at once; a longer run inserts them again, from the start.
const BUILT_ROWS = 300_000;
const rows: EventRow[] = [];
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
const others = await Promise.all(Array.from({ length: sessions - 1 }, () => ClickHouse.connect(config.clickhouse)));
const insertMs: number[] = [];
let next = 0;
const started = performance.now();
await Promise.all(
  [db, ...others].map(async (session) => {
    for (let done = next; done < total; done = next) {
      next += rowsPerInsert;
      const start = done % rows.length;
      const insert = rows.slice(start, start + rowsPerInsert);
      if (insert.length < rowsPerInsert) insert.push(...rows.slice(0, rowsPerInsert - insert.length));
      const began = performance.now();
      await session.insert("events", insert);
      insertMs.push(performance.now() - began);
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
clearInterval(sampler);
for (const session of [db, ...others]) await session.close();
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
