import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { directTarget, httpTarget, ImportError, type Rejected, runImport } from "../../src/import";
import type { ClickHouse } from "../../src/storage/clickhouse";
import { count, withoutAutomatic } from "../helpers/rows";
import { scratchDir } from "../helpers/scratch";
import { clickhouseEnv, openDb, startService, type TestService, uniqueDatabase } from "../helpers/service";

// The import as a library: PostHog's shapes in, the same rules as the API, each event once however often a file
// is imported, through a running service or in this process.

const KEY = "key-1";
const dir = scratchDir("ingest-import-run-");
const at = (minute: number) => `2024-05-01T10:${String(minute).padStart(2, "0")}:00Z`;

/** One of each line a PostHog export or capture log may hold, and three bad lines. */
const LINES = [
  { event: "$pageview", distinct_id: "anon-1", timestamp: at(0), properties: { $session_id: "s-1" } },
  "not json",
  {
    event: "$identify",
    distinct_id: "user-1",
    timestamp: at(1),
    properties: { $anon_distinct_id: "anon-1", $set: { plan: "pro" }, $session_id: "s-1" },
  },
  [
    { event: "in an array", distinct_id: "user-1", timestamp: at(2), properties: { $session_id: "s-1" } },
    { event: "no time", distinct_id: "user-1" },
  ],
  { api_key: "any", batch: [{ event: "in a body", distinct_id: "user-2", timestamp: at(3) }] },
  {
    uuid: "0190b4a1-0000-7000-8000-000000000002",
    event: "export row",
    distinct_id: "user-3",
    properties: JSON.stringify({ $browser: "Firefox" }),
    timestamp: at(4),
    set: JSON.stringify({ email: "u3@example.com" }),
  },
  { event: "bad time", distinct_id: "user-4", timestamp: "yesterday" },
  { distinct_id: "user-5", timestamp: at(5) },
].map((line) => (typeof line === "string" ? line : JSON.stringify(line)));

const file = join(dir, "export.jsonl");
writeFileSync(file, `${LINES.join("\n")}\n`);

let service: TestService;
let db: ClickHouse;
beforeAll(async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY });
  db = service.db;
});
afterAll(() => service.stop());

async function imported(target: Parameters<typeof runImport>[0]["target"], files = [file]) {
  const rejected: Rejected[] = [];
  const summary = await runImport({
    files,
    target,
    batchSize: 2,
    inFlight: 2,
    maxLineBytes: 1 << 20,
    strict: false,
    onReject: (r) => rejected.push(r),
  });
  return { summary, rejected };
}

const stored = (where = "1") => count(db, "events", where, { final: true });

describe("through a running service", () => {
  test("every good event is stored, each bad line reported with its number and reason", async () => {
    const { summary, rejected } = await imported(httpTarget(service.url, KEY, 20 << 20));
    expect(summary).toMatchObject({
      files: 1,
      lines: 8,
      imported: 5,
      dropped: 0,
      rejected: { "not JSON": 1, "no timestamp": 1, "invalid timestamp": 1, "no event name": 1 },
    });
    expect(rejected.map((r) => [r.line, r.reason])).toEqual([
      [2, "not JSON"],
      [4, "no timestamp"],
      [7, "invalid timestamp"],
      [8, "no event name"],
    ]);
    expect(rejected[0]).toEqual({ file, line: 2, reason: "not JSON", text: "not json" });
    expect(await stored()).toBe(5);
  });

  test("importing the file again stores nothing twice, in events or in sessions", async () => {
    await imported(httpTarget(service.url, KEY, 20 << 20));
    expect(await stored()).toBe(5);
    const [session] = await db.rows<{ events: string | number }>(
      `SELECT uniqMerge(event_count) AS events FROM ${db.table("sessions")} WHERE session_id = 's-1'`,
    );
    expect(Number(session?.events)).toBe(3);
  });

  test("identity and export rows follow the API's rules: the anonymous ID joins the user, $set and set apply", async () => {
    const persons = await db.rows<{ distinct_id: string; person: string }>(
      `SELECT distinct_id, toString(argMax(person_id, version)) AS person FROM ${db.table("person_distinct_ids")}
       GROUP BY distinct_id ORDER BY distinct_id`,
    );
    const of = new Map(persons.map((p) => [p.distinct_id, p.person]));
    expect(of.get("anon-1")).toBe(of.get("user-1")!);
    expect(of.get("user-3")).not.toBe(of.get("user-1")!);
    const properties = await db.rows<{ properties: string }>(
      `SELECT properties FROM ${db.table("persons")} FINAL WHERE is_deleted = 0 ORDER BY properties`,
    );
    const explicit = properties.map((p) => withoutAutomatic(JSON.parse(p.properties)));
    expect(explicit).toContainEqual({ email: "u3@example.com" });
    expect(explicit).toContainEqual({ plan: "pro" });
    const [row] = await db.rows<{ properties: string }>(
      `SELECT properties FROM ${db.table("events")} WHERE event = 'export row' LIMIT 1`,
    );
    expect(JSON.parse(row!.properties)).toEqual({ $browser: "Firefox" });
  });

  test("a file that is one pretty-printed JSON array: each element an event, rejections by the line it starts on", async () => {
    const exported = [
      { event: "from array", distinct_id: "arr-1", timestamp: at(10), properties: { $session_id: "arr-s" } },
      { event: "from array", distinct_id: "arr-1" },
      { event: "from array", distinct_id: "arr-2", timestamp: at(11) },
    ];
    const pretty = join(dir, "export.json");
    writeFileSync(pretty, JSON.stringify(exported, null, 2));
    for (let run = 0; run < 2; run++) {
      const { summary, rejected } = await imported(httpTarget(service.url, KEY, 20 << 20), [pretty]);
      expect(summary).toMatchObject({ lines: 3, imported: 2 });
      expect(rejected.map((r) => [r.line, r.reason])).toEqual([[10, "no timestamp"]]);
    }
    expect(await stored("event = 'from array'")).toBe(2); // twice imported, once stored
  });

  test("a file named twice (by any path) is read once", async () => {
    const { summary } = await imported(httpTarget(service.url, KEY, 20 << 20), [file, `${dir}/./export.jsonl`]);
    expect(summary).toMatchObject({ files: 1, lines: 8, imported: 5 });
  });

  test("a batch larger than the service takes goes in halves, so a service with a small MAX_BATCH_BYTES gets it all", async () => {
    const small = await startService({ PUBLIC_API_KEYS: KEY, MAX_BATCH_BYTES: "4000" });
    try {
      const lines = Array.from({ length: 20 }, (_, n) =>
        JSON.stringify({
          event: "big",
          distinct_id: `big-${n}`,
          timestamp: at(n),
          properties: { pad: "p".repeat(2500) },
        }),
      );
      const big = join(dir, "big.jsonl");
      writeFileSync(big, `${lines.join("\n")}\n`);
      const { summary } = await imported(httpTarget(small.url, KEY, 4000), [big]); // batches of 2 events: 5 KB of JSON
      expect(summary).toMatchObject({ imported: 20, rejected: {} });
      expect(await count(small.db, "events", "event = 'big'")).toBe(20);
      // the same batches, not halved, are refused: what the halving is for
      await expect(imported(httpTarget(small.url, KEY, 1 << 20), [big])).rejects.toThrow("refused a batch: 413");
    } finally {
      await small.stop();
    }
  });

  test("a service that refuses the batches (a wrong key) stops the import with its answer", async () => {
    const run = imported(httpTarget(service.url, "wrong-key", 20 << 20));
    await expect(run).rejects.toBeInstanceOf(ImportError);
    await expect(run).rejects.toThrow("refused a batch: 401");
  });
});

describe("in this process", () => {
  test("the same file, twice, into a database of its own: the same events, once", async () => {
    const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: uniqueDatabase() });
    for (let run = 0; run < 2; run++) {
      const target = await directTarget(config);
      try {
        expect((await imported(target)).summary.imported).toBe(5);
      } finally {
        await target.close();
      }
    }
    const own = await openDb(config.clickhouse.database);
    try {
      expect(await count(own, "events", "1", { final: true })).toBe(5);
      const uuids = await own.rows<{ uuid: string }>(
        `SELECT DISTINCT toString(uuid) AS uuid FROM ${own.table("events")} WHERE event = 'export row'`,
      );
      expect(uuids).toEqual([{ uuid: "0190b4a1-0000-7000-8000-000000000002" }]); // the source's own uuid is kept
    } finally {
      await own.command(`DROP DATABASE \`${config.clickhouse.database}\``);
      await own.close();
    }
  });
});
