import { describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RESTORE_MARKER } from "../../src/engine";
import { MANIFEST } from "../../src/storage";
import { SCHEMA_VERSION, TABLES } from "../../src/storage/schema";
import { processEnv, queryRows, ROOT, type RunningService, runCommand, startProcess } from "../helpers/process";
import { scratchDir } from "../helpers/scratch";

// `ingest backup` and `ingest restore` as an operator runs them: a real service ingests and stops, the backup is
// made and restored by the executable's own processes, and a service started on the restored directory serves
// what the first one stored, every table alike.

const embedded = !process.env.CLICKHOUSE_URL;
const KEY = "key-1";
const T0 = Date.UTC(2026, 9, 1);

type Env = Record<string, string>;

/** A data directory's environment: its own directory and database. */
const dataEnv = (extra: Env = {}): Env => processEnv({ PUBLIC_API_KEYS: KEY, ...extra });

async function post(url: string, batch: object[]): Promise<void> {
  const response = await fetch(`${url}/batch/`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ api_key: KEY, batch }),
  });
  expect(response.status).toBe(200);
}

/**
 * Events that fill every table: visitors' page views in sessions, identified users with properties, a merge of
 * two persons (an override), a group. `round` makes each call's events new ones.
 */
async function ingestRound(url: string, round: number, visitors = 30): Promise<void> {
  const at = (i: number) => new Date(T0 + round * 40 * 86_400_000 + i * 1000).toISOString();
  const views = Array.from({ length: visitors * 10 }, (_, i) => ({
    event: "$pageview",
    distinct_id: `anon-${round}-${i % visitors}`,
    timestamp: at(i),
    properties: {
      $session_id: `s-${round}-${i % visitors}`,
      $current_url: `https://example.com/${i}`,
      $set_once: { first: i },
    },
  }));
  await post(url, views);
  await post(
    url,
    Array.from({ length: visitors - 5 }, (_, i) => ({
      event: "$identify",
      distinct_id: `user-${round}-${i}`,
      timestamp: at(1000 + i),
      properties: { $anon_distinct_id: `anon-${round}-${i}`, $set: { email: `u${i}@example.com`, round } },
    })),
  );
  // two persons that exist become one: the one merged away gets an override
  await post(url, [
    {
      event: "$identify",
      distinct_id: `user-${round}-0`,
      timestamp: at(2000),
      properties: { $anon_distinct_id: `anon-${round}-${visitors - 1}` },
    },
    {
      event: "$groupidentify",
      distinct_id: `user-${round}-1`,
      timestamp: at(2001),
      properties: { $group_type: "company", $group_key: `acme-${round}`, $group_set: { plan: "pro", round } },
    },
  ]);
}

async function stop(service: RunningService): Promise<void> {
  service.child.kill("SIGTERM");
  await service.child.exited;
}

/** Runs a service on `env`'s data directory, lets `work` use it, and stops it. */
async function withService(env: Env, work: (url: string) => Promise<void>): Promise<void> {
  const service = await startProcess(env);
  try {
    await work(service.url);
  } finally {
    await stop(service);
  }
}

/**
 * Every table of the schema as its rows read (FINAL: duplicates collapsed, aggregates merged): how many, and a
 * hash of all their values that ignores their order, so that two directories compare table by table.
 */
function contentsSql(): string {
  return TABLES.map((table) => {
    const values = Object.entries(table.columns).map(([name, type]) =>
      type.startsWith("AggregateFunction") ? `finalizeAggregation(${name})` : name,
    );
    return `SELECT '${table.name}' AS name, count() AS rows, toString(sum(cityHash64(${values.join(", ")}))) AS hash FROM {db}.${table.name} FINAL`;
  }).join(" UNION ALL ");
}

type Contents = Record<string, { rows: number; hash: string }>;

async function contents(env: Env): Promise<Contents> {
  const rows = await queryRows<{ name: string; rows: number | string; hash: string }>(env, contentsSql());
  return Object.fromEntries(rows.map((row) => [row.name, { rows: Number(row.rows), hash: row.hash }]));
}

const backup = (env: Env, ...args: string[]) => runCommand(["backup", ...args], env);
const restore = (env: Env, ...args: string[]) => runCommand(["restore", ...args], env);

/** Every file under `dir` with its size and modification time: what "nothing changed" compares. */
function listing(dir: string): string[] {
  if (!existsSync(dir)) return [];
  if (statSync(dir).isFile()) return [`${statSync(dir).size} ${statSync(dir).mtimeMs}`];
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .sort()
    .map((path) => {
      const stat = statSync(join(dir, path));
      return stat.isFile() ? `${path} ${stat.size} ${stat.mtimeMs}` : `${path}/`;
    });
}

/**
 * A data directory a service filled (`ingestRound` 0) and stopped, made once for the tests that only read it: they
 * back it up, restore into other directories, and start a service on it that ingests nothing.
 */
let stopped: Promise<Env> | undefined;
const stoppedData = (): Promise<Env> => {
  stopped ??= (async () => {
    const env = dataEnv();
    // squashing the merges at once, so that every table holds rows (person_squashes too)
    const service = await startProcess({ ...env, SQUASH_INTERVAL_S: "1", SQUASH_GRACE_S: "0" });
    try {
      await ingestRound(service.url, 0);
      const deadline = Date.now() + 20_000;
      while (!service.output().includes("merges squashed") && Date.now() < deadline) await Bun.sleep(100);
    } finally {
      await stop(service);
    }
    return env;
  })();
  return stopped;
};

describe.skipIf(!embedded)("ingest backup and restore", () => {
  test("a stopped service's data, backed up and restored into a new directory: a service there serves every table as it was", async () => {
    const env = await stoppedData();
    const original = await contents(env);
    for (const table of TABLES)
      expect({ table: table.name, rows: original[table.name]!.rows > 0 }).toEqual({ table: table.name, rows: true });

    const dest = join(scratchDir("ingest-backups-"), "full");
    const made = await backup(env, dest);
    expect(made.code).toBe(0);
    const summary = JSON.parse(made.stdout);
    expect(summary).toMatchObject({ backup: dest, database: env.CLICKHOUSE_DATABASE, base: null });
    expect(Object.keys(summary.tables).sort()).toEqual(TABLES.map((table) => table.name).sort());
    expect(summary.tables.events.rows).toBe(original.events!.rows);
    expect(summary.bytes).toBeGreaterThan(0);
    expect(JSON.parse(readFileSync(join(dest, MANIFEST), "utf8"))).toMatchObject({
      service: expect.any(String),
      schema: SCHEMA_VERSION,
    });

    const target = dataEnv({
      CLICKHOUSE_DATABASE: env.CLICKHOUSE_DATABASE!,
      DATA_DIR: join(scratchDir("ingest-restored-"), "data"),
    });
    const restored = await restore(target, dest);
    expect([restored.code, restored.stderr]).toEqual([0, ""]);
    expect(JSON.parse(restored.stdout)).toMatchObject({
      restored: dest,
      chain: [dest],
      database: env.CLICKHOUSE_DATABASE,
    });
    expect(existsSync(join(target.DATA_DIR!, RESTORE_MARKER))).toBe(false);
    expect(await contents(target)).toEqual(original);

    // the service starts on it, knows its persons: an event of an identified user joins the person it had
    await withService(target, (url) =>
      post(url, [{ event: "after", distinct_id: "anon-0-3", timestamp: new Date(T0 + 5_000_000).toISOString() }]),
    );
    const [same] = await queryRows<{ persons: number | string }>(
      target,
      "SELECT uniqExact(person_id) AS persons FROM {db}.events_resolved WHERE distinct_id IN ('anon-0-3', 'user-0-3')",
    );
    expect(Number(same!.persons)).toBe(1);
  }, 120_000);

  test("incremental: a backup on the last one copies what changed; the chain restores to the data as it was, from wherever the chain is moved", async () => {
    const env = dataEnv();
    const backups = scratchDir("ingest-backups-");
    await withService(env, (url) => ingestRound(url, 0));
    expect((await backup(env, join(backups, "monday"))).code).toBe(0);
    await withService(env, (url) => ingestRound(url, 1, 10));
    const tuesday = await backup(env, "--base", join(backups, "monday"), join(backups, "tuesday"));
    expect([tuesday.code, tuesday.stderr]).toEqual([0, ""]);
    await withService(env, (url) => ingestRound(url, 2, 10));
    // a bandwidth beside the base: both are the engine's settings of one statement
    const wednesday = await backup(
      env,
      "--base",
      join(backups, "tuesday"),
      "--bandwidth",
      "500",
      join(backups, "wednesday"),
    );
    expect([wednesday.code, wednesday.stderr]).toEqual([0, ""]);
    const original = await contents(env);
    const incremental = JSON.parse(wednesday.stdout);
    expect(incremental.base).toBe(join(backups, "tuesday"));
    // files its base holds are named, not copied (how many depends on what merges rewrote meanwhile)
    expect(readFileSync(join(backups, "wednesday", ".backup"), "utf8")).toContain("<use_base>true</use_base>");

    // the chain is kept as one directory: moved whole, it restores from its new place
    const moved = join(scratchDir("ingest-moved-"), "backups");
    renameSync(backups, moved);
    const target = dataEnv({
      CLICKHOUSE_DATABASE: env.CLICKHOUSE_DATABASE!,
      DATA_DIR: join(scratchDir("ingest-restored-"), "data"),
    });
    const restored = await restore(target, join(moved, "wednesday"));
    expect([restored.code, restored.stderr]).toEqual([0, ""]);
    expect(JSON.parse(restored.stdout).chain).toEqual(
      ["wednesday", "tuesday", "monday"].map((name) => join(moved, name)),
    );
    expect(await contents(target)).toEqual(original);

    // a link of the chain missing: refused, naming it
    renameSync(join(moved, "tuesday"), join(moved, "tuesday-elsewhere"));
    const again = dataEnv({
      CLICKHOUSE_DATABASE: env.CLICKHOUSE_DATABASE!,
      DATA_DIR: join(scratchDir("ingest-restored-"), "data"),
    });
    const broken = await restore(again, join(moved, "wednesday"));
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain(`${join(moved, "tuesday")} does not exist`);
    expect(existsSync(again.DATA_DIR!)).toBe(false);
  }, 180_000);

  test("killed during a backup: no manifest, and restore refuses it; killed during a restore: the directory is refused until a restore with --force", async () => {
    const env = dataEnv();
    await withService(env, (url) => ingestRound(url, 0, 200));
    const backups = scratchDir("ingest-backups-");
    const dest = join(backups, "killed");
    // killed once the engine has begun writing the backup's files
    const killed = await killWhen(["backup", dest], env, () =>
      ["data", "metadata"].some((name) => existsSync(join(dest, name))),
    );
    expect(killed).toBe(-1);
    expect(existsSync(join(dest, MANIFEST))).toBe(false);
    const target = dataEnv({
      CLICKHOUSE_DATABASE: env.CLICKHOUSE_DATABASE!,
      DATA_DIR: join(scratchDir("ingest-restored-"), "data"),
    });
    const refused = await restore(target, dest);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${dest} is not a complete backup: it has no ${MANIFEST}`);
    expect(existsSync(target.DATA_DIR!)).toBe(false);

    const good = join(backups, "good");
    expect((await backup(env, good)).code).toBe(0);
    const before = listing(good);
    // killed once the engine has begun restoring the database
    const database = join(target.DATA_DIR!, "metadata", `${env.CLICKHOUSE_DATABASE}.sql`);
    expect(await killWhen(["restore", good], target, () => existsSync(database))).toBe(-1);
    expect(existsSync(join(target.DATA_DIR!, RESTORE_MARKER))).toBe(true);
    expect(listing(good)).toEqual(before);
    const again = await restore(target, good);
    expect([again.code, again.stderr]).toEqual([2, expect.stringContaining("holds an incomplete restore")]);
    const start = Bun.spawn([process.execPath, "src/main.ts"], {
      cwd: ROOT,
      env: target,
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await start.exited).toBe(1);
    expect(await new Response(start.stdout).text()).toContain("holds an incomplete restore");
    const query = await runCommand(["query", "SELECT 1"], target);
    expect([query.code, query.stderr]).toEqual([1, expect.stringContaining("holds an incomplete restore")]);
    const copy = await backup(target, join(backups, "of-incomplete"));
    expect([copy.code, copy.stderr]).toEqual([2, expect.stringContaining("holds an incomplete restore")]);

    const forced = await restore(target, "--force", good);
    expect([forced.code, forced.stderr]).toEqual([0, ""]);
    expect(await contents(target)).toEqual(await contents(env));
    await withService(target, async () => {});
  }, 180_000);

  test("a damaged backup fails its restore (exit 1) rather than the first query that reads the damage", async () => {
    const env = await stoppedData();
    const dest = join(scratchDir("ingest-backups-"), "full");
    expect((await backup(env, dest)).code).toBe(0);
    const part = readdirSync(join(dest, "data", env.CLICKHOUSE_DATABASE!, "events"))[0]!;
    const file = join(dest, "data", env.CLICKHOUSE_DATABASE!, "events", part, "data.bin");
    const bytes = readFileSync(file);
    bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
    writeFileSync(file, bytes);
    const target = dataEnv({
      CLICKHOUSE_DATABASE: env.CLICKHOUSE_DATABASE!,
      DATA_DIR: join(scratchDir("ingest-restored-"), "data"),
    });
    const restored = await restore(target, dest);
    expect([restored.code, restored.stdout]).toEqual([1, ""]);
    expect(restored.stderr).toContain("the restored events failed the engine's check of its parts");
    expect(existsSync(join(target.DATA_DIR!, RESTORE_MARKER))).toBe(true);
  }, 120_000);

  test("what cannot be backed up or restored is refused in one sentence, exit 2, and nothing is changed", async () => {
    const env = await stoppedData();
    const backups = scratchDir("ingest-backups-");
    const full = join(backups, "full");
    // a service holds the directory
    const service = await startProcess(env);
    try {
      const [held, into] = await Promise.all([backup(env, full), restore(env, "--force", full)]);
      expect([held.code, held.stderr]).toEqual([
        2,
        expect.stringContaining(`A running service (process ${service.child.pid}) holds`),
      ]);
      expect(into.code).toBe(2);
    } finally {
      await stop(service);
    }
    expect(existsSync(full)).toBe(false);
    expect((await backup(env, full)).code).toBe(0);
    const fullListing = listing(full);

    const notEmpty = join(backups, "not-empty");
    mkdirSync(notEmpty);
    writeFileSync(join(notEmpty, "notes.txt"), "mine");
    const stranger = join(backups, "stranger");
    mkdirSync(stranger);
    writeFileSync(join(stranger, "x"), "");
    const elsewhere = join(scratchDir("ingest-elsewhere-"), "next");
    const refusals: [string[], string][] = [
      [[], "give the directory"],
      [["--prot", "1", full], "Unknown option"],
      [[join(backups, "a"), join(backups, "b")], "unexpected argument"],
      [[join(backups, "missing", "dest")], "is not an existing directory"],
      [[notEmpty], "is not empty"],
      [[full], "is a backup already"],
      [["--base", stranger, join(backups, "next")], "is not a backup of ingest"],
      [["--base", full, elsewhere], "must be in the directory the new backup goes in"],
      [[join(backups, "b.zip")], "must name a directory"],
      [["--bandwidth", "0", join(backups, "c")], '--bandwidth takes megabytes a second, a number above 0 (was "0")'],
      [["--bandwidth", "fast", join(backups, "c")], "--bandwidth takes megabytes a second"],
      [[join(env.DATA_DIR!, "inside")], "must not be inside one another"],
    ];
    // each refusal is its own process, as an operator meets it; they change nothing, so they run side by side
    const [otherDatabase, noData, ...refused] = await Promise.all([
      backup({ ...env, CLICKHOUSE_DATABASE: "other_db" }, join(backups, "other")),
      backup({ ...env, DATA_DIR: join(backups, "no-data") }, join(backups, "other")),
      ...refusals.map(([args]) => backup(env, ...args)),
    ]);
    for (const [i, [args, says]] of refusals.entries()) {
      const { code, stderr, stdout } = refused[i]!;
      expect({ args, code, stderr, stdout }).toEqual({
        args,
        code: 2,
        stderr: expect.stringContaining(says),
        stdout: "",
      });
      expect(stderr.trim().split("\n")).toHaveLength(1);
    }
    expect(readdirSync(backups).sort()).toEqual(["full", "not-empty", "stranger"]);
    expect(existsSync(elsewhere)).toBe(false);
    expect([otherDatabase!.code, otherDatabase!.stderr]).toEqual([
      2,
      expect.stringContaining("holds no database other_db"),
    ]);
    expect(noData!.code).toBe(2);

    // restore
    const fresh = () => ({ ...env, DATA_DIR: join(scratchDir("ingest-restored-"), "data") });
    const newer = join(backups, "newer");
    const newerSchema = join(backups, "newer-schema");
    for (const [dir, change] of [
      [newer, { service: "99.0.0" }],
      [newerSchema, { schema: 99 }],
    ] as const) {
      cpSync(full, dir, { recursive: true });
      const manifest = JSON.parse(readFileSync(join(dir, MANIFEST), "utf8"));
      writeFileSync(join(dir, MANIFEST), JSON.stringify({ ...manifest, ...change }));
    }
    const used = fresh();
    mkdirSync(used.DATA_DIR!);
    writeFileSync(join(used.DATA_DIR!, "something"), "");
    const restoreRefusals: [Env, string[], string][] = [
      [fresh(), [newer], "newer than this ingest"],
      [fresh(), [newerSchema], "newer than this ingest"],
      [fresh(), [join(backups, "missing")], "does not exist"],
      [fresh(), [stranger], "is not a backup of ingest"],
      [fresh(), [join(backups, "not-empty")], "is not a backup of ingest"],
      [
        { ...fresh(), CLICKHOUSE_DATABASE: "other_db" },
        [full],
        `is a backup of the database ${env.CLICKHOUSE_DATABASE}`,
      ],
      [used, [full], "is not empty"],
      [env, [full], "is not empty"],
      [fresh(), ["--force"], "give the directory"],
      [{ ...env, DATA_DIR: join(notEmpty, "notes.txt") }, ["--force", full], "is not a directory"],
      [{ ...env, DATA_DIR: join(full, "data") }, ["--force", full], "must not be inside one another"],
    ];
    const before = restoreRefusals.map(([target]) => listing(target.DATA_DIR!));
    const restoreRefused = await Promise.all(restoreRefusals.map(([target, args]) => restore(target, ...args)));
    for (const [i, [target, args, says]] of restoreRefusals.entries()) {
      const { code, stderr } = restoreRefused[i]!;
      expect({ args, code, stderr }).toEqual({ args, code: 2, stderr: expect.stringContaining(says) });
      expect(stderr.trim().split("\n")).toHaveLength(1);
      expect(listing(target.DATA_DIR!)).toEqual(before[i]!);
    }
    expect(listing(full)).toEqual(fullListing);
  }, 180_000);
});

describe("ingest backup and restore with CLICKHOUSE_URL", () => {
  test("print the server's own statements for the service's database, and exit 2: nothing was backed up", async () => {
    const env = {
      PATH: process.env.PATH ?? "",
      CLICKHOUSE_URL: "http://127.0.0.1:1",
      CLICKHOUSE_DATABASE: "analytics",
    };
    const made = await backup(env, "--base", "/backups/monday", "/backups/tuesday");
    expect([made.code, made.stdout]).toEqual([2, ""]);
    expect(made.stderr).toContain(
      "BACKUP DATABASE `analytics` TO Disk('backups', 'tuesday') SETTINGS base_backup = Disk('backups', 'monday');",
    );
    const restored = await restore(env, "/backups/tuesday");
    expect([restored.code, restored.stdout]).toEqual([2, ""]);
    expect(restored.stderr).toContain("RESTORE DATABASE `analytics` FROM Disk('backups', 'tuesday');");
  });
});

/**
 * Runs `ingest ARGS` and kills it (SIGKILL) as soon as `when` holds, checked every millisecond; returns its exit
 * status (-1 when it was killed before it ended by itself, which the caller expects).
 */
async function killWhen(args: string[], env: Env, when: () => boolean): Promise<number> {
  const child = Bun.spawn([process.execPath, "src/main.ts", ...args], {
    cwd: ROOT,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  let exited: number | undefined;
  void child.exited.then((code) => {
    exited = code;
  });
  while (exited === undefined && !when()) await Bun.sleep(1);
  if (exited !== undefined) return exited;
  child.kill("SIGKILL");
  await child.exited;
  return -1;
}
