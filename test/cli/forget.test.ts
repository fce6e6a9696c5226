import { describe, expect, test } from "bun:test";
import {
  byTable,
  OTHERS_STATE,
  OUR_EVENTS,
  STORY,
  sql,
  storedByTable,
  TRACES,
  type Trace,
  withinTrace,
} from "../helpers/forget";
import { logEntries, processEnv, queryRows, type RunningService, runCommand, startProcess } from "../helpers/process";

// `ingest forget`, as an operator runs it from a shell: on a stopped data directory, through a running service's
// admin door, or on a server directly. The story is test/helpers/forget.ts's; what each table holds of it is read
// by another process (chDB binds a directory to one) or, while the service runs, through its query port.

const embedded = !process.env.CLICKHOUSE_URL;
const KEY = "key-1";
const TOKEN = "forget-test-token-0123456789";

const forget = (args: readonly string[], env: Record<string, string>) => runCommand(["forget", ...args], env);

async function tell(url: string, batches: readonly object[][] = STORY): Promise<void> {
  for (const batch of batches) {
    const response = await fetch(`${url}/batch/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ api_key: KEY, batch }),
    });
    expect(response.status).toBe(200);
  }
}

/** Rows of `template` (TRACES, OTHERS_STATE): through the service's query port while it runs, else from the data. */
async function read<Row>(env: Record<string, string>, template: string, service?: RunningService): Promise<Row[]> {
  if (service === undefined || !embedded) return queryRows<Row>(env, template);
  const response = await fetch(`${service.started.query}/?default_format=JSONEachRow`, {
    method: "POST",
    body: sql(template, env.CLICKHOUSE_DATABASE!),
    headers: { authorization: `Basic ${btoa("default:pw")}` },
  });
  const text = await response.text();
  if (!response.ok) throw new Error(text);
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Row);
}

const traces = async (env: Record<string, string>, service?: RunningService) =>
  byTable(await read<Trace>(env, TRACES, service));

/** Every trace of theirs gone, and every other row where it was (s-shared summed up again without theirs). */
async function expectForgotten(
  env: Record<string, string>,
  before: Record<string, [number, number]>,
  others: unknown[],
  service?: RunningService,
): Promise<void> {
  const after = await read<Trace>(env, TRACES, service);
  for (const [table, theirs] of Object.entries(storedByTable(after))) expect([table, theirs]).toEqual([table, 0]);
  for (const [table, [theirs, total]] of Object.entries(byTable(after))) {
    expect([table, theirs]).toEqual([table, 0]);
    if (table !== "sessions") expect([table, total]).toEqual([table, before[table]![1] - before[table]![0]]);
  }
  const shared = (others as { key: string }[]).map((row) =>
    row.key === "s-shared" ? { ...row, value: "1 f-other" } : row,
  );
  expect(await read(env, OTHERS_STATE, service)).toEqual(shared);
}

/** The summary line on stdout. */
function summaryOf(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split("\n");
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

/** The audit line: the IDs hashed, nothing of theirs in the clear. */
function expectAudit(line: Record<string, unknown> | undefined, via: string): void {
  expect(line).toMatchObject({ level: "info", msg: "persons forgotten", via, removed: { events: OUR_EVENTS } });
  expect(line!.ids).toEqual([expect.stringMatching(/^sha256:[0-9a-f]{16}$/)]);
  expect(JSON.stringify(line)).not.toMatch(/f-user|f-anon|secret|Secret|s-user|s-anon/);
}

async function stop(service: RunningService): Promise<void> {
  service.child.kill("SIGTERM");
  expect(await service.child.exited).toBe(0);
}

describe.skipIf(!embedded)("ingest forget on a stopped data directory", () => {
  test("refused while a service holds it; once stopped, it erases their every trace and leaves the rest", async () => {
    const env = processEnv({ PUBLIC_API_KEYS: KEY });
    const client = { PATH: env.PATH!, DATA_DIR: env.DATA_DIR!, CLICKHOUSE_DATABASE: env.CLICKHOUSE_DATABASE! };
    const service = await startProcess(env);
    try {
      await tell(service.url);
      const held = await forget(["f-user"], client);
      expect([held.code, held.stdout]).toEqual([2, ""]);
      expect(held.stderr).toBe(
        `ingest forget: A running service (process ${service.child.pid}) holds ${env.DATA_DIR}: forget through it ` +
          "instead: start it with ADMIN_PORT and ADMIN_TOKEN, and run this with the same ADMIN_PORT (or ADMIN_URL) " +
          "and ADMIN_TOKEN.\n",
      );
    } finally {
      await stop(service);
    }
    const rows = await read<Trace>(env, TRACES);
    const before = byTable(rows);
    expect(before.events![0]).toBe(OUR_EVENTS);
    const others = await read(env, OTHERS_STATE);

    // an ID no person has: one sentence, nothing changed
    const unknown = await forget(["f-user", "nobody"], client);
    expect(unknown).toEqual({
      code: 2,
      stdout: "",
      stderr: 'ingest forget: No person or event has the distinct ID "nobody": nothing was forgotten.\n',
    });
    expect(await traces(env)).toEqual(before);

    // an ADMIN_PORT nobody answers on: the directory is used
    const done = await forget(["f-user"], { ...client, ADMIN_PORT: "1", ADMIN_TOKEN: TOKEN });
    expect(done.code).toBe(0);
    const summary = summaryOf(done.stdout);
    expect(summary).toMatchObject({ ids: 1, persons: 2, distinctIds: 2, sessionsRebuilt: 1, via: "directly" });
    const { events, persons } = summary.removed as Record<string, number>;
    expect(events).toBe(OUR_EVENTS);
    // the rows stored as it started: merges (while a process had the directory open) may have collapsed some
    expect(withinTrace(persons!, before.persons![0], storedByTable(rows).persons!)).toBe(persons!);
    expectAudit(logEntries(done.stderr)[0], "directly");
    await expectForgotten(env, before, others);

    // done: a second time, nobody has the ID
    expect((await forget(["f-anon"], client)).code).toBe(2);
  }, 60_000); // eight processes after the service open the engine on the directory: 20 s on a busy 2-core machine
});

describe("ingest forget through a running service's admin door", () => {
  test("refused without the token, with a wrong one, on the ingest port; with it, every trace goes", async () => {
    const env = processEnv({
      PUBLIC_API_KEYS: KEY,
      PERSONS_ON_EVENTS: "1",
      ADMIN_PORT: "0",
      ADMIN_TOKEN: TOKEN,
      ...(embedded && { QUERY_PORT: "0", QUERY_PASSWORD: "pw" }),
    });
    const service = await startProcess(env);
    try {
      const admin = service.started.admin!;
      expect(admin).toStartWith("http://127.0.0.1:");
      await tell(service.url);
      const before = await traces(env, service);
      const others = await read(env, OTHERS_STATE, service);
      const client = { PATH: env.PATH!, ADMIN_URL: admin };

      const noToken = await forget(["f-user"], client);
      expect(noToken).toMatchObject({ code: 2, stdout: "" });
      expect(noToken.stderr).toStartWith("ingest forget: ADMIN_TOKEN is not set");
      const wrong = await forget(["f-user"], { ...client, ADMIN_TOKEN: `${TOKEN}x` });
      expect(wrong).toEqual({
        code: 2,
        stdout: "",
        stderr: `ingest forget: The service at ${admin} refused ADMIN_TOKEN.\n`,
      });
      const body = JSON.stringify({ distinct_ids: ["f-user"] });
      const post = (url: string, headers: Record<string, string> = {}) =>
        fetch(`${url}/admin/forget`, { method: "POST", body, headers });
      const bare = await post(admin);
      expect([bare.status, bare.headers.get("www-authenticate")]).toEqual([401, "Bearer"]);
      // the public port has no such door, whatever the request carries
      const ingestPort = await post(service.url, { authorization: `Bearer ${TOKEN}` });
      expect(ingestPort.status).toBe(404);
      const bearer = { authorization: `Bearer ${TOKEN}` };
      expect((await fetch(`${admin}/admin/forget`, { headers: bearer })).status).toBe(405);
      const bad = await fetch(`${admin}/admin/forget`, {
        method: "POST",
        headers: bearer,
        body: '{"distinct_ids":[]}',
      });
      expect(bad.status).toBe(400);
      const unknown = await forget(["nobody"], { ...client, ADMIN_TOKEN: TOKEN });
      expect([unknown.code, unknown.stderr]).toEqual([
        2,
        'ingest forget: No person or event has the distinct ID "nobody": nothing was forgotten.\n',
      ]);
      expect(await traces(env, service)).toEqual(before);

      const done = await forget(["f-anon"], { ...client, ADMIN_TOKEN: TOKEN });
      expect([done.code, done.stderr]).toEqual([0, ""]);
      expect(summaryOf(done.stdout)).toMatchObject({ ids: 1, persons: 2, distinctIds: 2, via: "service" });
      await expectForgotten(env, before, others, service);

      // the service forgot them too: the same IDs make new persons, with nothing of the old
      await tell(service.url, [
        [{ event: "$pageview", distinct_id: "f-user", properties: { $set: { fresh: true } } }],
        [{ event: "$pageview", distinct_id: "f-anon", properties: { $process_person_profile: false } }],
      ]);
      const now = await read<{ distinct_id: string; person_properties: string; props: string }>(
        env,
        `SELECT e.distinct_id AS distinct_id, e.person_properties AS person_properties, p.properties AS props
         FROM {db}.events AS e LEFT JOIN (SELECT id, properties FROM {db}.persons FINAL) AS p ON p.id = e.person_id
         WHERE e.distinct_id IN ('f-user', 'f-anon') ORDER BY distinct_id`,
        service,
      );
      expect(now).toEqual([
        { distinct_id: "f-anon", person_properties: "", props: "" },
        { distinct_id: "f-user", person_properties: '{"fresh":true}', props: '{"fresh":true}' },
      ]);
      expect((await traces(env, service)).person_overrides![0]).toBe(0);
    } finally {
      await stop(service);
    }
    const log = logEntries(service.output());
    expectAudit(
      log.find((line) => line.msg === "persons forgotten"),
      "service",
    );
    expect(log.filter((line) => line.msg === "admin request refused").map((line) => line.status)).toEqual([
      401, 401, 405, 400, 404,
    ]);
    expect(service.output()).not.toMatch(/f-user|f-anon|nobody/);
  });
});

describe.skipIf(embedded)("ingest forget on a ClickHouse server", () => {
  test("goes to the server directly, beside the running service", async () => {
    const env = processEnv({ PUBLIC_API_KEYS: KEY });
    const service = await startProcess(env);
    try {
      await tell(service.url);
      const before = await traces(env);
      const others = await read(env, OTHERS_STATE);
      const client = { ...env, PORT: "0" };
      const done = await forget(["f-user"], client);
      expect(done.code).toBe(0);
      expect(summaryOf(done.stdout)).toMatchObject({ ids: 1, persons: 2, via: "directly" });
      expectAudit(logEntries(done.stderr)[0], "directly");
      await expectForgotten(env, before, others);
    } finally {
      await stop(service);
    }
  });
});

describe("ingest forget's usage", () => {
  test("an unknown flag, no ID, an empty one, no data: one sentence and exit 2; --help: the usage", async () => {
    const env = { PATH: process.env.PATH ?? "", DATA_DIR: "/nonexistent/ingest-data" };
    expect(await forget(["--bogus", "x"], env)).toEqual({
      code: 2,
      stdout: "",
      stderr: 'ingest forget: unknown or incomplete option "--bogus" (see ingest forget --help)\n',
    });
    expect(await forget([], env)).toEqual({
      code: 2,
      stdout: "",
      stderr: "ingest forget: no distinct ID given (see ingest forget --help)\n",
    });
    expect(await forget(["x", ""], env)).toEqual({
      code: 2,
      stdout: "",
      stderr: "ingest forget: a distinct ID cannot be empty (see ingest forget --help)\n",
    });
    const missing = await forget(["x"], env);
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining("No data in /nonexistent/ingest-data")]);
    const help = await forget(["--help"], env);
    expect([help.code, help.stdout]).toEqual([0, expect.stringContaining("Usage: ingest forget")]);
  });
});
