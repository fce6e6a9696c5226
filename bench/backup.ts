/**
 * `npm run bench backup`: what backups cost. BENCH_BACKUP_EVENTS (1,000,000) `http`-shaped events imported into a
 * stopped data directory (`ingest import`, in process), then backed up (`ingest backup`) and restored into a new
 * directory (`ingest restore`), each a process of its own, timed. Then the service on that directory, with its
 * admin door, under the `http` load in turns without and with backups looping through the door (full ones, back
 * to back, each removed once made: the most a backup schedule could ask), A B B A over BENCH_ROUNDS rounds: the
 * rate and p99 with backups against without, and each backup's pause (the seconds ingest was held) and time.
 * BENCH_BACKUP_BANDWIDTH (megabytes a second) makes those backups copy no faster (`ingest backup --bandwidth`).
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { random } from "../test/helpers/identity-model";
import {
  average,
  drive,
  fmt,
  type LoadResult,
  latencyMs,
  printLoad,
  ROOT,
  SECONDS,
  type Service,
  startService,
  stop,
} from "./harness";
import { event, KEY, PEOPLE, START, writeBodies } from "./workload";

const EVENTS = Number(process.env.BENCH_BACKUP_EVENTS ?? 1_000_000);
/** `--bandwidth` of the looping backups, megabytes a second; none: as fast as the engine copies. */
const BANDWIDTH = process.env.BENCH_BACKUP_BANDWIDTH;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const TOKEN = "bench-backup-token-0123456789";

export async function runBackupBench(work: string): Promise<void> {
  const data = join(work, "service");
  const backups = join(work, "backups");
  mkdirSync(backups);
  const history = join(work, "history.jsonl");
  await writeHistory(history);
  const imported = await command(["import", "--checkpoint", join(work, "checkpoint.json"), history], data);
  rmSync(history);
  console.log(
    `bench backup: ${fmt(EVENTS)} events (${PEOPLE} people, 2% $identify) imported in ${imported.seconds.toFixed(1)} s`,
  );

  const full = await command(["backup", join(backups, "full")], data);
  console.log(
    `  backup of the stopped directory: ${full.seconds.toFixed(1)} s the process, ${full.summary.seconds} s inside ` +
      `it; ${fmt(Number(full.summary.rows))} rows, ${fmt(Number(full.summary.bytes) / 1e6)} MB`,
  );
  const restored = await command(["restore", join(backups, "full")], join(work, "restored"));
  console.log(
    `  restore into a new directory:    ${restored.seconds.toFixed(1)} s the process, ${restored.summary.seconds} s ` +
      `inside it (parts read back included); ${fmt(Number(restored.summary.rows))} rows`,
  );
  rmSync(join(work, "restored"), { recursive: true, force: true });
  rmSync(join(backups, "full"), { recursive: true, force: true });

  const bodiesFile = join(work, "bodies.jsonl");
  writeBodies(bodiesFile, 1000, { shape: "known", people: PEOPLE });
  const service = await startService(data, { ADMIN_PORT: "0", ADMIN_TOKEN: TOKEN, BACKUP_DIR: backups });
  try {
    printLoad("warm-up", await drive(service, bodiesFile));
    await compare(service, bodiesFile, backups);
  } finally {
    await stop(service);
  }
}

/** One backup made through the door, as its summary says. */
interface Made {
  readonly seconds: number;
  readonly paused: number;
}

/**
 * The load without and with backups looping, A B B A over ROUNDS rounds; prints each load, the backups made during
 * it, and the ratios of rate and p99.
 */
async function compare(service: Service, bodiesFile: string, backups: string): Promise<void> {
  const quiet: LoadResult[] = [];
  const loaded: LoadResult[] = [];
  const made: Made[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const withBackups of round % 2 === 1 ? [false, true] : [true, false]) {
      if (!withBackups) {
        const result = await drive(service, bodiesFile);
        printLoad(`round ${round}, no backups`, result);
        quiet.push(result);
        continue;
      }
      let done = false;
      const looping = backupLoop(service, backups, round, () => done);
      const result = await drive(service, bodiesFile);
      done = true;
      const these = await looping;
      made.push(...these);
      printLoad(`round ${round}, backups`, result);
      console.log(`  ${"".padEnd(16)} ${describe(these, 1)}`);
      loaded.push(result);
    }
  }
  const rates = quiet.map((result, i) => loaded[i]!.rate / result.rate);
  const p99s = quiet.map((result, i) => latencyMs(loaded[i]!.latency.p99) / latencyMs(result.latency.p99));
  const ratios = (values: number[]) => values.map((r) => `×${r.toFixed(2)}`).join(", ");
  console.log(
    `bench backup: ingest with backups looping through the door${BANDWIDTH === undefined ? "" : ` at ${BANDWIDTH} MB/s`}, ` +
      `against without, by round: rate ${ratios(rates)} ` +
      `(mean ×${average(rates).toFixed(2)}), p99 ${ratios(p99s)} (mean ×${average(p99s).toFixed(2)}); all backups: ${describe(made, ROUNDS)}`,
  );
}

/** Full backups through the admin door one after another until `stopped()`, each removed once made. */
async function backupLoop(service: Service, backups: string, round: number, stopped: () => boolean): Promise<Made[]> {
  const made: Made[] = [];
  for (let n = 0; !stopped(); n++) {
    const dest = join(backups, `round-${round}-${n}`);
    const response = await fetch(`${service.started.admin}/admin/backup`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ dest, ...(BANDWIDTH !== undefined && { bandwidth: Number(BANDWIDTH) * 1e6 }) }),
    });
    const answer = (await response.json()) as { seconds: number; paused: number; error?: string };
    if (!response.ok) throw new Error(`backup through the door: ${response.status} ${answer.error}`);
    made.push({ seconds: answer.seconds, paused: answer.paused });
    rmSync(dest, { recursive: true, force: true });
  }
  return made;
}

/** The backups made during `loads` loads: how many, how long, and how long ingest was held, each and in all. */
function describe(made: readonly Made[], loads: number): string {
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
  const paused = made.map((m) => m.paused);
  const held = paused.reduce((sum, seconds) => sum + seconds, 0) / (loads * SECONDS);
  return (
    `${made.length} backups, each ${median(made.map((m) => m.seconds)).toFixed(2)} s (median); ingest held ` +
    `${median(paused).toFixed(3)} s a backup (median), at most ${Math.max(0, ...paused).toFixed(3)} s, ` +
    `${(100 * held).toFixed(1)}% of the load's time`
  );
}

/** `ingest ARGS` on `dataDir`, a process of its own: its wall time and the summary it printed. */
async function command(
  args: readonly string[],
  dataDir: string,
): Promise<{ seconds: number; summary: Record<string, unknown> }> {
  const started = performance.now();
  const child = Bun.spawn([process.execPath, "src/main.ts", ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", PUBLIC_API_KEYS: KEY, DATA_DIR: dataDir },
    stdout: "pipe",
    stderr: "pipe", // its progress
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`ingest ${args[0]} exited ${code}: ${stdout}${stderr}`);
  return { seconds: (performance.now() - started) / 1000, summary: JSON.parse(stdout) as Record<string, unknown> };
}

/** EVENTS `http`-shaped events as `ingest import` reads them, one a line, written a chunk at a time. */
async function writeHistory(file: string): Promise<void> {
  const rng = random(20261124);
  const writer = Bun.file(file).writer();
  for (let i = 0; i < EVENTS; i++) {
    writer.write(`${JSON.stringify(event(rng, START + i * 100, { shape: "known", people: PEOPLE }))}\n`);
    if (i % 10_000 === 9_999) await writer.flush();
  }
  await writer.end();
}
