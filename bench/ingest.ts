/**
 * Ingest benchmarks, on the embedded engine in a temporary directory. Machines here are noisy, so each figure
 * comes with a ratio against a baseline measured in the same run.
 *
 *   npm run bench:in-process     # both
 *   bun bench/ingest.ts http     # HTTP throughput vs the engine's raw insert rate
 *   bun bench/ingest.ts persons  # per-event identity cost with few vs many known persons
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { normalize } from "../src/capture/normalize";
import { PendingBytes } from "../src/capture/pending";
import { timestampFromDate } from "../src/capture/timestamp";
import { loadConfig } from "../src/config";
import type { CapturedEvent } from "../src/contract/event";
import { restartFor, workerThreadsFor } from "../src/engine";
import { serve } from "../src/http/server";
import { personIdFor } from "../src/identity";
import { ClickHouse } from "../src/storage/clickhouse";
import { Storage, type StorageOptions, storageOptions } from "../src/write";
import { eventRow } from "../src/write/rows";

restartFor({ workerThreads: workerThreadsFor(0) }); // the runtime as the service runs it (src/engine/restart.ts)
const dataDir = mkdtempSync(join(tmpdir(), "ingest-bench-"));
process.on("exit", () => rmSync(dataDir, { recursive: true, force: true }));
let databases = 0;

interface Opened {
  readonly storage: Storage;
  /** The bench's own handle on the same database, for the baseline and for maintenance. */
  readonly db: ClickHouse;
}

/**
 * The storage's options on `database`, as a service started with `env` would have them; `soleWriter: false`
 * measures the embedded engine as one of several writers.
 */
function optionsFor(database: string, env: Record<string, string> = {}, soleWriter?: boolean): StorageOptions {
  const options = storageOptions(loadConfig({ ...env, DATA_DIR: dataDir, CLICKHOUSE_DATABASE: database }));
  return soleWriter === undefined ? options : { ...options, identity: { ...options.identity, soleWriter } };
}

async function openStorage(options = optionsFor(`bench_${databases++}`)): Promise<Opened> {
  return { storage: await Storage.open(options), db: await ClickHouse.connect(options.clickhouse) };
}

function pageview(distinctId: string, i: number) {
  return {
    event: "$pageview",
    distinct_id: distinctId,
    uuid: Bun.randomUUIDv7(),
    timestamp: new Date(Date.UTC(2024, 4, 1) + i * 1000).toISOString(),
    properties: {
      $session_id: `session-${distinctId}`,
      $current_url: `https://app.example.com/page/${i % 50}`,
      $host: "app.example.com",
      $browser: "Firefox",
      $screen_width: 1920,
    },
  };
}

function captured(distinctId: string, i: number): CapturedEvent {
  const raw = pageview(distinctId, i);
  return normalize(
    {
      event: raw.event,
      distinctId,
      properties: raw.properties,
      topLevelSets: {},
      offsetMs: undefined,
      sentAt: undefined,
      timestamp: timestampFromDate(new Date(raw.timestamp)),
      uuid: raw.uuid,
    },
    timestampFromDate(new Date()),
  );
}

const seconds = (start: number) => (performance.now() - start) / 1000;
const rate = (count: number, secs: number) => `${Math.round(count / secs).toLocaleString("en")}/s`;

/** Events/s through HTTP (parse, validate, identity, write) against raw inserts of the same rows. */
async function httpThroughput(): Promise<void> {
  const CLIENTS = 32;
  const REQUESTS_PER_CLIENT = 25;
  const EVENTS_PER_REQUEST = 100;
  const total = CLIENTS * REQUESTS_PER_CLIENT * EVENTS_PER_REQUEST;

  const { storage, db } = await openStorage();
  const config = loadConfig({ HOST: "127.0.0.1", PORT: "0", PUBLIC_API_KEYS: "bench" });
  const server = serve({ config, sink: storage, pending: new PendingBytes(config.maxPendingBytes) });
  const bodies = Array.from({ length: CLIENTS * REQUESTS_PER_CLIENT }, (_, r) =>
    JSON.stringify({
      api_key: "bench",
      batch: Array.from({ length: EVENTS_PER_REQUEST }, (_, i) => pageview(`user-${(r * 7 + i) % 2000}`, i)),
    }),
  );
  const url = `${server.url.href}batch/`;
  const post = (body: string) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
  await post(bodies[0]!); // warm up: schema, JIT

  const start = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      for (let r = 0; r < REQUESTS_PER_CLIENT; r++) {
        const response = await post(bodies[client * REQUESTS_PER_CLIENT + r]!);
        if (response.status !== 200) throw new Error(`status ${response.status}: ${await response.text()}`);
      }
    }),
  );
  const serviceSecs = seconds(start);
  await server.stop(true);

  // Baseline: the same number of event rows inserted straight into the engine, 10,000 per insert.
  const rows = Array.from({ length: total }, (_, i) => {
    const event = captured(`user-${i % 2000}`, i);
    return eventRow(event, personIdFor(event.distinctId));
  });
  const baselineStart = performance.now();
  for (let i = 0; i < rows.length; i += 10_000) await db.insert("events", rows.slice(i, i + 10_000));
  const engineSecs = seconds(baselineStart);
  await storage.close();
  await db.close();

  console.log(
    `http: ${total.toLocaleString("en")} events, ${CLIENTS} concurrent clients x ${EVENTS_PER_REQUEST} events per request`,
  );
  console.log(`  service        ${rate(total, serviceSecs)} (${serviceSecs.toFixed(2)} s)`);
  console.log(`  engine inserts ${rate(total, engineSecs)} (${engineSecs.toFixed(2)} s, baseline)`);
  console.log(`  ratio service/engine: ${(engineSecs / serviceSecs).toFixed(2)}`);
}

/** Per-event cost of identity resolution and writes with few and with many persons already known. */
async function personScaling(): Promise<void> {
  const MEASURED = 20_000;
  const BATCH = 500;
  const results: Record<string, number> = {};
  for (const known of [1_000, 100_000]) {
    // Measured as one of several writers (the reads a cache miss costs); a sole writer's caches and startup
    // preload are measured by `npm run bench persons`. The warm phase measures the cache itself, so its entries
    // must outlive seeding and measurement.
    const options = optionsFor(`bench_${databases++}`, { LINK_CACHE_TTL_MS: "600000" }, false);
    const { storage, db } = await openStorage(options);
    for (let i = 0; i < known; i += 10_000) {
      await storage.ingest(Array.from({ length: Math.min(10_000, known - i) }, (_, j) => captured(`user-${i + j}`, j)));
    }
    // Let the seeding's background merges finish, so they do not run during the measurement.
    for (const table of ["events", "persons", "person_distinct_ids", "sessions"]) {
      await db.command(`OPTIMIZE TABLE ${db.table(table)} FINAL`);
    }
    for (const phase of ["warm", "cold"] as const) {
      const target = phase === "warm" ? storage : await Storage.open(options); // cold: empty cache
      const events = Array.from({ length: MEASURED }, (_, i) => captured(`user-${(i * 7919) % known}`, i));
      const start = performance.now();
      for (let i = 0; i < events.length; i += BATCH) await target.ingest(events.slice(i, i + BATCH));
      results[`${phase} ${known}`] = ((performance.now() - start) * 1000) / MEASURED;
      if (target !== storage) await target.close();
    }
    await storage.close();
    await db.close();
  }
  console.log(`persons: ${MEASURED.toLocaleString("en")} events over known distinct IDs, ${BATCH} per write`);
  for (const [name, micros] of Object.entries(results))
    console.log(`  ${name.padEnd(12)} ${micros.toFixed(1)} µs/event`);
  for (const phase of ["warm", "cold"]) {
    const ratio = results[`${phase} 100000`]! / results[`${phase} 1000`]!;
    console.log(`  ratio ${phase} 100,000 / 1,000 persons: ${ratio.toFixed(2)} (1.0 = cost independent of persons)`);
  }
}

const which = process.argv[2];
if (which === undefined || which === "http") await httpThroughput();
if (which === undefined || which === "persons") await personScaling();
