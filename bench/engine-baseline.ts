// The engine's own insert rate for the rows a batch file becomes: events converted exactly as the service
// converts them, inserted 10,000 rows at a time through @clickhouse/client into a fresh embedded engine.
// Run as its own process by bench/load.ts (chDB binds one data directory per process). Prints rows/s as JSON.
import { normalize } from "../src/capture/normalize";
import { timestampOf } from "../src/capture/timestamp";
import { acceptEvents } from "../src/capture/validate";
import { loadConfig } from "../src/config";
import { ClickHouse } from "../src/storage/clickhouse";
import { personIdFor } from "../src/storage/identity";
import { createSchema, eventRow } from "../src/storage/schema";

const [bodiesFile, dataDir, total] = [process.argv[2]!, process.argv[3]!, Number(process.argv[4])];
const lines = (await Bun.file(bodiesFile).text()).split("\n").filter((line) => line !== "");
const receivedAt = timestampOf(new Date());
const rows = [];
for (let i = 0; rows.length < total; i++) {
  const { events } = acceptEvents((JSON.parse(lines[i % lines.length]!) as { batch: unknown[] }).batch);
  for (const event of events) {
    const captured = normalize(event, receivedAt);
    rows.push(eventRow(captured, personIdFor(captured.distinctId)));
  }
}
const db = await ClickHouse.connect(loadConfig({ DATA_DIR: dataDir, CLICKHOUSE_DATABASE: "baseline" }).clickhouse);
await createSchema(db);
await db.insert("events", rows.slice(0, 10_000)); // warm up
const started = performance.now();
for (let i = 0; i < rows.length; i += 10_000) await db.insert("events", rows.slice(i, i + 10_000));
const seconds = (performance.now() - started) / 1000;
await db.close();
console.log(JSON.stringify({ rows: rows.length, seconds, rate: rows.length / seconds }));
