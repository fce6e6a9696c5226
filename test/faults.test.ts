import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processEnv, queryRows, startProcess } from "./helpers/process";

// Faults under load, against the service as its own process: writes failing (a full disk) and SIGTERM. Clients
// behave like the PostHog SDKs: a batch keeps its event uuids, and a 5xx or a dropped connection is retried.

const KEY = "key-1";
const cleanups: (() => void)[] = [];
afterAll(() => {
  for (const cleanup of cleanups.reverse()) cleanup();
});

interface Load {
  /** Event uuids the service acknowledged with a 200. */
  readonly acknowledged: Set<string>;
  /** 5xx answers and dropped connections seen (each then retried). */
  failures: number;
}

/**
 * `clients` SDK-like clients, each sending `batches` batches of 20 events (every event in a session) one after
 * another, retrying each until it is acknowledged, or `until()` says to give up.
 */
function runClients(url: string, clients: number, batches: number, until: () => boolean): [Load, Promise<void>] {
  const load: Load = { acknowledged: new Set(), failures: 0 };
  const client = async (c: number) => {
    for (let b = 0; b < batches && !until(); b++) {
      const batch = Array.from({ length: 20 }, (_, i) => ({
        event: i % 3 ? "clicked" : "$pageview",
        distinct_id: `client-${c}-user-${i % 4}`,
        uuid: Bun.randomUUIDv7(),
        timestamp: new Date(Date.UTC(2024, 5, 1, 0, 0, b, i)).toISOString(),
        properties: { $session_id: `client-${c}-session-${b % 5}` },
      }));
      const body = JSON.stringify({ api_key: KEY, batch });
      for (let attempt = 0; !until(); attempt++) {
        const status = await fetch(`${url}/batch/`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        }).then(
          (response) => response.status,
          () => 0,
        );
        if (status === 200) {
          for (const event of batch) load.acknowledged.add(event.uuid);
          break;
        }
        expect(status === 0 || status >= 500).toBe(true); // never a 4xx for a valid batch
        load.failures++;
        await Bun.sleep(Math.min(20 * 2 ** attempt, 200));
      }
    }
  };
  return [load, Promise.all(Array.from({ length: clients }, (_, c) => client(c))).then(() => {})];
}

interface Stored {
  events: number;
  distinct: number;
  sessionEvents: number;
  missing: number;
}

async function stored(env: Record<string, string>, acknowledged: Set<string>): Promise<Stored> {
  const [row] = await queryRows<Record<string, string | number>>(
    env,
    `SELECT
       (SELECT count() FROM {db}.events FINAL) AS events,
       (SELECT uniqExact(uuid) FROM {db}.events) AS distinct,
       (SELECT sum(n) FROM (SELECT uniqMerge(event_count) AS n FROM {db}.sessions GROUP BY session_id)) AS session_events`,
  );
  const uuids = new Set(
    (await queryRows<{ uuid: string }>(env, "SELECT toString(uuid) AS uuid FROM {db}.events")).map((r) => r.uuid),
  );
  return {
    events: Number(row?.events),
    distinct: Number(row?.distinct),
    sessionEvents: Number(row?.session_events),
    missing: [...acknowledged].filter((uuid) => !uuids.has(uuid)).length,
  };
}

/** A tmpfs of `megabytes` to use as the data directory, or why there cannot be one here. */
function smallDisk(megabytes: number): string | { skipped: string } {
  if (process.env.CLICKHOUSE_URL) return { skipped: "CLICKHOUSE_URL is set: the disk is the server's" };
  if (process.getuid?.() !== 0) return { skipped: "mounting a tmpfs needs root" };
  const dir = mkdtempSync(join(tmpdir(), "ingest-small-disk-"));
  const mount = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${megabytes}m`, "tmpfs", dir]);
  if (mount.exitCode !== 0) return { skipped: `mount -t tmpfs failed: ${mount.stderr.toString().trim()}` };
  cleanups.push(() => {
    Bun.spawnSync(["umount", "-l", dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

const disk = smallDisk(256);
if (typeof disk !== "string") console.log(`faults: the full-disk test is skipped: ${disk.skipped}`);

test.skipIf(typeof disk !== "string")(
  "a full disk under SDK-style retries: nothing acknowledged is lost, nothing is duplicated in events or sessions",
  async () => {
    const dataDir = disk as string;
    const env = processEnv({ PUBLIC_API_KEYS: KEY, DATA_DIR: dataDir });
    const service = await startProcess(env);
    const filler = join(dataDir, "filler");
    const deadline = performance.now() + 60_000;
    const [load, done] = runClients(service.url, 4, 40, () => performance.now() > deadline);
    try {
      await Bun.sleep(300);
      // fill the disk to the last byte, hold it full while the clients keep sending, then free it
      Bun.spawnSync(["dd", "if=/dev/zero", `of=${filler}`, "bs=1M"], { stderr: "ignore" }); // until ENOSPC
      expect(statfsSync(dataDir).bavail).toBe(0);
      await Bun.sleep(1_500);
      const failuresWhileFull = load.failures;
      rmSync(filler, { force: true });
      await done;
      expect(failuresWhileFull).toBeGreaterThan(0); // the fault really happened
    } finally {
      rmSync(filler, { force: true });
      service.child.kill("SIGTERM");
      await service.child.exited;
    }
    const sent = 4 * 40 * 20;
    const result = await stored(env, load.acknowledged);
    console.log(
      `faults: full disk: ${sent} events sent, ${load.failures} failed answers retried, ${JSON.stringify(result)}`,
    );
    expect(load.acknowledged.size).toBe(sent);
    expect(result).toEqual({
      events: sent,
      distinct: sent,
      sessionEvents: sent,
      missing: 0,
    });
  },
  120_000,
);

test("SIGTERM under load: every acknowledged event is stored, none twice", async () => {
  const env = processEnv({ PUBLIC_API_KEYS: KEY, SHUTDOWN_TIMEOUT_MS: "2000" });
  const service = await startProcess(env);
  let stopped = false;
  const [load, done] = runClients(service.url, 8, 1_000, () => stopped);
  await Bun.sleep(1_000);
  service.child.kill("SIGTERM");
  expect(await service.child.exited).toBe(0);
  stopped = true;
  await done;
  expect(load.acknowledged.size).toBeGreaterThan(0);
  const result = await stored(env, load.acknowledged);
  console.log(
    `faults: SIGTERM: ${load.acknowledged.size} events acknowledged, ${load.failures} failed answers, ${JSON.stringify(result)}`,
  );
  expect(result.missing).toBe(0);
  // unacknowledged batches may be stored too (written, then the connection closed): never twice
  expect(result.distinct).toBe(result.events);
  expect(result.sessionEvents).toBe(result.events);
}, 60_000);
