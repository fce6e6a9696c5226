import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MANIFEST } from "../../src/storage";
import {
  logEntries,
  processEnv,
  queryRows,
  ROOT,
  type RunningService,
  runCommand,
  runStatements,
  startProcess,
} from "../helpers/process";
import { scratchDir } from "../helpers/scratch";

// `ingest backup` through a running service's admin door, while clients keep sending: real processes, real HTTP,
// the real engine. What was acknowledged before a backup began is in it, once; its persons and links agree with
// its facts (a service started on the restored copy finds nothing to repair).

const embedded = !process.env.CLICKHOUSE_URL;
const KEY = "key-1";
const TOKEN = "backup-door-token-0123456789";
const SENDERS = 4;
const BATCH = 50;

type Env = Record<string, string>;

const backup = (env: Env, ...args: string[]) => runCommand(["backup", ...args], env);
const restore = (env: Env, ...args: string[]) => runCommand(["restore", ...args], env);

async function stop(service: RunningService): Promise<void> {
  service.child.kill("SIGTERM");
  expect(await service.child.exited).toBe(0);
}

/** What the senders were told: each batch's uuids and when its 200 came; the longest wait for one. */
interface Sent {
  readonly acked: { uuids: string[]; at: number }[];
  slowestMs: number;
  stopped: boolean;
}

/** A client's batch of a round: page views of its visitors, and two of them identified (a first link, or a merge). */
function batchOf(client: number, round: number): Record<string, unknown>[] {
  const at = new Date().toISOString();
  const batch: Record<string, unknown>[] = Array.from({ length: BATCH - 2 }, (_, i) => ({
    event: "$pageview",
    uuid: crypto.randomUUID(),
    distinct_id: `anon-${client}-${(round * 7 + i) % 40}`,
    timestamp: at,
    properties: { $session_id: `s-${client}-${i % 5}`, $set_once: { first: round } },
  }));
  for (const k of [round % 40, (round + 13) % 40]) {
    batch.push({
      event: "$identify",
      uuid: crypto.randomUUID(),
      distinct_id: `user-${client}-${k % 25}`,
      timestamp: at,
      properties: { $anon_distinct_id: `anon-${client}-${k}`, $set: { round } },
    });
  }
  return batch;
}

/**
 * One client sending batches one after another until told to stop (`batchOf`). A batch refused as busy is sent
 * again.
 */
async function sender(url: string, client: number, sent: Sent): Promise<void> {
  for (let round = 0; !sent.stopped; round++) {
    const batch = batchOf(client, round);
    for (;;) {
      const started = performance.now();
      const response = await fetch(`${url}/batch/`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ api_key: KEY, batch }),
      });
      await response.arrayBuffer();
      sent.slowestMs = Math.max(sent.slowestMs, performance.now() - started);
      if (response.status === 200) break;
      expect(response.status).toBe(503);
      await Bun.sleep(50);
    }
    sent.acked.push({ uuids: batch.map((event) => event.uuid as string), at: Date.now() });
  }
}

const ackedBefore = (sent: Sent, moment: number) => sent.acked.filter((b) => b.at < moment).flatMap((b) => b.uuids);

async function untilAcked(sent: Sent, events: number): Promise<void> {
  while (sent.acked.length * BATCH < events) await Bun.sleep(50);
}

/**
 * A restored directory checked: every event acknowledged before its backup began, once; every distinct ID of an
 * event or a fact linked, every link to a stored person; and a service started on it repairs nothing.
 */
async function expectRestored(env: Env, before: readonly string[], all: ReadonlySet<string>): Promise<number> {
  const counted = await queryRows<{ uuid: string; n: number | string }>(
    env,
    "SELECT toString(uuid) AS uuid, count() AS n FROM {db}.events FINAL GROUP BY uuid",
  );
  const stored = new Map(counted.map((row) => [row.uuid, Number(row.n)]));
  const missing = before.filter((uuid) => stored.get(uuid) !== 1);
  expect(missing).toEqual([]);
  expect(counted.filter((row) => Number(row.n) !== 1 || !all.has(row.uuid))).toEqual([]);
  const [loose] = await queryRows<Record<string, number | string>>(
    env,
    `WITH links AS (SELECT distinct_id, person_id FROM {db}.person_distinct_ids FINAL WHERE is_deleted = 0)
     SELECT
       (SELECT count() FROM (SELECT DISTINCT distinct_id FROM {db}.events) WHERE distinct_id NOT IN (SELECT distinct_id FROM links)) AS unlinked_events,
       (SELECT count() FROM (SELECT DISTINCT distinct_id FROM {db}.identity_facts) WHERE distinct_id NOT IN (SELECT distinct_id FROM links)) AS unlinked_facts,
       (SELECT count() FROM links WHERE person_id NOT IN (SELECT id FROM {db}.persons FINAL WHERE is_deleted = 0)) AS links_to_no_person,
       (SELECT count() FROM links) AS links`,
  );
  expect({ ...loose, links: Number(loose!.links) > 0 }).toEqual({
    unlinked_events: 0,
    unlinked_facts: 0,
    links_to_no_person: 0,
    links: true,
  } as never);
  // the startup repair runs before the service says it started
  const service = await startProcess(env);
  service.child.kill("SIGTERM");
  await service.child.exited;
  expect(logEntries(service.output()).filter((line) => line.level !== "info" && line.level !== "debug")).toEqual([]);
  return stored.size;
}

describe.skipIf(!embedded)("ingest backup through a running service's admin door", () => {
  test("backed up and incrementally backed up mid-load: each restores every event acknowledged before it, once, with persons and links consistent", async () => {
    const backups = join(scratchDir("ingest-door-backups-"), "backups");
    const env = processEnv({ PUBLIC_API_KEYS: KEY, ADMIN_PORT: "0", ADMIN_TOKEN: TOKEN, BACKUP_DIR: backups });
    const service = await startProcess(env);
    const sent: Sent = { acked: [], slowestMs: 0, stopped: false };
    const senders = Array.from({ length: SENDERS }, (_, client) => sender(service.url, client, sent));
    const client = { PATH: env.PATH!, ADMIN_URL: service.started.admin!, ADMIN_TOKEN: TOKEN };
    const full = join(backups, "full");
    const next = join(backups, "next");
    let fullAt = 0;
    let nextAt = 0;
    try {
      expect(existsSync(backups)).toBe(true); // the service made it
      await untilAcked(sent, 3000);
      fullAt = Date.now();
      sent.slowestMs = 0;
      const made = await backup(client, full);
      expect([made.code, made.stderr]).toEqual([0, ""]);
      const summary = JSON.parse(made.stdout);
      expect(summary).toMatchObject({ backup: full, base: null, via: "service" });
      const during = sent.acked.filter((b) => b.at >= fullAt).length;
      console.log(
        `full backup through the door: ${summary.rows} rows, ${summary.seconds} s, ingest paused ${summary.paused} s; ` +
          `slowest batch meanwhile ${Math.round(sent.slowestMs)} ms, ${during} batches acknowledged meanwhile`,
      );
      expect(summary.paused).toBeGreaterThan(0);
      expect(summary.paused).toBeLessThanOrEqual(summary.seconds);

      await untilAcked(sent, sent.acked.length * BATCH + 2000);
      nextAt = Date.now();
      const incremental = await backup(client, "--base", full, next);
      expect([incremental.code, incremental.stderr]).toEqual([0, ""]);
      const nextSummary = JSON.parse(incremental.stdout);
      expect(nextSummary).toMatchObject({ backup: next, base: full, via: "service" });
      await untilAcked(sent, sent.acked.length * BATCH + 500);
    } finally {
      sent.stopped = true;
      await Promise.all(senders);
      await stop(service);
    }
    const all = new Set(sent.acked.flatMap((b) => b.uuids));

    const restored = processEnv({ PUBLIC_API_KEYS: KEY, CLICKHOUSE_DATABASE: env.CLICKHOUSE_DATABASE! });
    expect((await restore(restored, full)).code).toBe(0);
    const inFull = await expectRestored(restored, ackedBefore(sent, fullAt), all);

    const chain = processEnv({ PUBLIC_API_KEYS: KEY, CLICKHOUSE_DATABASE: env.CLICKHOUSE_DATABASE! });
    expect((await restore(chain, next)).code).toBe(0);
    const inNext = await expectRestored(chain, ackedBefore(sent, nextAt), all);
    expect(inNext).toBeGreaterThan(inFull);
    expect(all.size).toBeGreaterThan(inNext);
  }, 120_000);

  test("refused: without the token (401), without BACKUP_DIR, outside BACKUP_DIR; a held directory with no door", async () => {
    const backups = scratchDir("ingest-door-refusals-");
    const env = processEnv({ PUBLIC_API_KEYS: KEY, ADMIN_PORT: "0", ADMIN_TOKEN: TOKEN });
    const service = await startProcess(env);
    try {
      const admin = service.started.admin!;
      const body = JSON.stringify({ dest: join(backups, "one") });
      const bare = await fetch(`${admin}/admin/backup`, { method: "POST", body });
      expect([bare.status, bare.headers.get("www-authenticate")]).toEqual([401, "Bearer"]);
      const slowest = await fetch(`${admin}/admin/backup`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ dest: join(backups, "one"), bandwidth: 0 }),
      });
      expect([slowest.status, await slowest.json()]).toEqual([
        400,
        { status: "error", error: '"bandwidth" must be a number of bytes a second, at least 1' },
      ]);
      const wrong = await backup({ PATH: env.PATH!, ADMIN_URL: admin, ADMIN_TOKEN: `${TOKEN}x` }, join(backups, "a"));
      expect(wrong).toEqual({
        code: 2,
        stdout: "",
        stderr: `ingest backup: the service at ${admin} refused ADMIN_TOKEN.\n`,
      });
      const unset = await backup({ PATH: env.PATH!, ADMIN_URL: admin, ADMIN_TOKEN: TOKEN }, join(backups, "a"));
      expect(unset).toEqual({
        code: 2,
        stdout: "",
        stderr:
          "ingest backup: The service has no BACKUP_DIR: restart it with BACKUP_DIR set to a directory for " +
          "backups (outside DATA_DIR) to back up through its admin door, and give a DEST directly in it.\n",
      });
      // no door asked for, and a service holds the directory
      const held = await backup({ PATH: env.PATH!, DATA_DIR: env.DATA_DIR! }, join(backups, "a"));
      expect([held.code, held.stdout]).toEqual([2, ""]);
      expect(held.stderr).toBe(
        `ingest backup: A running service (process ${service.child.pid}) holds ${env.DATA_DIR}: back up through it ` +
          "instead: start it with ADMIN_PORT, ADMIN_TOKEN and BACKUP_DIR, and run this with the same ADMIN_PORT " +
          "(or ADMIN_URL) and ADMIN_TOKEN, DEST directly in BACKUP_DIR.\n",
      );
    } finally {
      await stop(service);
    }

    const dir = join(backups, "allowed");
    const withDir = { ...env, BACKUP_DIR: dir };
    const second = await startProcess(withDir);
    try {
      const port = new URL(second.started.admin!).port;
      const client = { PATH: env.PATH!, ADMIN_PORT: port, ADMIN_TOKEN: TOKEN };
      mkdirSync(join(backups, "elsewhere"));
      const outside = await backup(client, join(backups, "elsewhere", "b"));
      expect(outside).toEqual({
        code: 2,
        stdout: "",
        stderr: `ingest backup: ${join(backups, "elsewhere", "b")} is not directly in BACKUP_DIR (${dir}): the service's engine writes backups nowhere else.\n`,
      });
      const deeper = await backup(client, join(dir, "x", "b"));
      expect(deeper.code).toBe(2);
      expect(existsSync(join(dir, "x"))).toBe(false);
    } finally {
      await stop(second);
    }
  });
});

/**
 * A table of random bytes (incompressible) in the service's database, about 24 MB in 20 files (each of its own
 * length: equal files would be copied once), which the engine copies at `BANDWIDTH`: for a few seconds, however
 * fast the disk, so that a flush acknowledged meanwhile, a bar drawn and a process stopped all fall within it.
 */
const BALLAST = `CREATE TABLE {db}.ballast ENGINE = MergeTree ORDER BY tuple() AS SELECT ${Array.from(
  { length: 20 },
  (_, i) => `randomString(${50 + i}) AS c${i}`,
).join(", ")} FROM numbers(20000)`;

/** Bytes a second the engine may read for these backups (`--bandwidth` 8). */
const BANDWIDTH = 8_000_000;

/** A line of the door's answer followed as it goes (src/http/admin-backup.ts). */
interface DoorLine {
  readonly progress?: { bytes: number; totalBytes: number; files: number; seconds: number; ingested: number };
  readonly status?: string;
  readonly [field: string]: unknown;
}

/**
 * `ingest backup ARGS` on a terminal (a pseudo-terminal), `whileRunning` told what it has written so far:
 * everything it wrote there, and its exit status.
 */
async function backupOnTerminal(env: Env, args: string[], whileRunning: (written: () => string) => Promise<void>) {
  let written = "";
  const decoder = new TextDecoder();
  const child = Bun.spawn([process.execPath, "src/main.ts", "backup", ...args], {
    cwd: ROOT,
    env,
    terminal: { cols: 160, rows: 24, data: (_terminal, data) => (written += decoder.decode(data, { stream: true })) },
  });
  await whileRunning(() => written);
  const code = await child.exited;
  child.terminal?.close();
  return { code, written };
}

/** The bars a command drew on a terminal (each `\r[…]…` then the rest of the line erased), in order. */
const ERASE = "\x1b[K";
const barsOf = (written: string) =>
  written
    .split("\r")
    .filter((piece) => piece.startsWith("[") && piece.endsWith(ERASE))
    .map((piece) => piece.slice(0, -ERASE.length));

describe.skipIf(!embedded)("ingest backup through the door, followed as it goes", () => {
  test("progress while the engine copies, with ingest going on (a flush acknowledged meanwhile is counted, and is not in the backup), the summary last; on a terminal a bar; a failure, or a service gone, exits 1", async () => {
    const backups = join(scratchDir("ingest-door-progress-"), "backups");
    const env = processEnv({ PUBLIC_API_KEYS: KEY, ADMIN_PORT: "0", ADMIN_TOKEN: TOKEN, BACKUP_DIR: backups });
    await stop(await startProcess(env)); // makes the database, which the ballast goes in
    await runStatements(env, BALLAST);
    const service = await startProcess(env);
    const client = { PATH: env.PATH!, ADMIN_URL: service.started.admin!, ADMIN_TOKEN: TOKEN };
    const before: Sent = { acked: [], slowestMs: 0, stopped: false };
    const meanwhile = batchOf(9, 0);
    const full = join(backups, "full");
    const lines: DoorLine[] = [];
    let acked = -1;
    try {
      const senders = [0, 1].map((id) => sender(service.url, id, before));
      await untilAcked(before, 500);
      before.stopped = true;
      await Promise.all(senders); // from here nothing is sent but `meanwhile`

      // the door's own answer: a line a report, the outcome last
      const response = await fetch(`${service.started.admin}/admin/backup`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, accept: "application/x-ndjson" },
        body: JSON.stringify({ dest: full, bandwidth: BANDWIDTH }),
      });
      expect([response.status, response.headers.get("content-type")]).toEqual([200, "application/x-ndjson"]);
      const reading = (async () => {
        let text = "";
        for await (const chunk of response.body!) {
          text += new TextDecoder().decode(chunk);
          for (let end = text.indexOf("\n"); end >= 0; end = text.indexOf("\n")) {
            lines.push(JSON.parse(text.slice(0, end)) as DoorLine);
            text = text.slice(end + 1);
          }
        }
      })();
      // the answer began: the engine's statement runs, so this batch's flush comes after the backup's moment, once
      // the engine has taken the parts (until then, ingest is held)
      const posted = await fetch(`${service.url}/batch/`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ api_key: KEY, batch: meanwhile }),
      });
      expect(posted.status).toBe(200);
      acked = lines.length;
      await reading;
      const outcome = lines.at(-1)!;
      const progress = lines.slice(0, -1).map((line) => line.progress!);
      console.log(
        `followed: ${progress.length} progress lines, the batch acknowledged after ${acked}; ${outcome.seconds} s, ` +
          `ingest paused ${outcome.paused} s; ${JSON.stringify(progress.at(-1))}`,
      );
      expect(outcome).toMatchObject({ status: "ok", backup: full, base: null });
      expect(outcome.paused).toBeGreaterThan(0);
      expect(progress.every((p) => p !== undefined)).toBe(true);
      // seen while it copied: the parts counted, not all of them copied yet
      expect(progress.some((p) => p.files > 0 && p.bytes < p.totalBytes)).toBe(true);
      // the batch was stored while the engine still copied: the hold had ended before the copy did (a report of the
      // engine made after the flush, counting its events; were ingest held to the end, every report would count none)
      expect(progress.some((p) => p.ingested === BATCH)).toBe(true);
      expect(progress.every((p) => p.ingested === 0 || p.ingested === BATCH)).toBe(true);

      // the engine unable to finish (its directory replaced by a file while it copies): exit 1, nothing left
      const broken = join(backups, "broken");
      const failing = runCommand(["backup", "--bandwidth", "8", broken], client);
      while (!existsSync(join(broken, "data"))) await Bun.sleep(5);
      for (let replaced = false; !replaced; ) {
        rmSync(broken, { recursive: true, force: true });
        try {
          writeFileSync(broken, "", { flag: "wx" });
          replaced = true;
        } catch {
          // the engine made the directory again meanwhile
        }
      }
      const failed = await failing;
      expect([failed.code, failed.stdout]).toEqual([1, ""]);
      expect(failed.stderr).toStartWith("ingest backup: The backup failed, and made no backup: ");
      expect(existsSync(broken)).toBe(false);

      // on a terminal: a bar redrawn while it copies; the service gone meanwhile: the answer ends without an
      // outcome, exit 1, the reason after the bar
      const gone = join(backups, "gone");
      const shown = await backupOnTerminal(client, ["--bandwidth", "8", gone], async (written) => {
        while (barsOf(written()).length === 0 && service.child.exitCode === null) await Bun.sleep(5);
        service.child.kill("SIGKILL");
        await service.child.exited;
      });
      const bars = barsOf(shown.written);
      const after = shown.written.slice(shown.written.lastIndexOf(ERASE) + ERASE.length).trim();
      console.log(`on a terminal: ${bars.length} bars, the last ${JSON.stringify(bars.at(-1))}`);
      expect(shown.code).toBe(1);
      expect(bars[0]).toMatch(/^\[[#-]{24}\] +\d+% {2}.* of .*\/s.* {2}\d+ events ingested since$/);
      expect(after).toStartWith(`ingest backup: the answer from ${client.ADMIN_URL} ended before the backup did`);
      expect(existsSync(join(gone, MANIFEST))).toBe(false);
    } finally {
      before.stopped = true;
      if (service.child.exitCode === null) service.child.kill("SIGKILL"); // a failure part-way leaves none behind
    }

    const restored = processEnv({ PUBLIC_API_KEYS: KEY, CLICKHOUSE_DATABASE: env.CLICKHOUSE_DATABASE! });
    expect((await restore(restored, full)).code).toBe(0);
    const all = new Set([...before.acked.flatMap((b) => b.uuids), ...meanwhile.map((e) => e.uuid as string)]);
    await expectRestored(restored, ackedBefore(before, Date.now()), all);
    const late = meanwhile.map((event) => `'${event.uuid}'`).join(", ");
    const [found] = await queryRows<{ n: number | string }>(
      restored,
      `SELECT count() AS n FROM {db}.events WHERE uuid IN (${late})`,
    );
    expect(Number(found!.n)).toBe(0);
  }, 240_000);
});
