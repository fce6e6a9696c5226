import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { hostname } from "node:os";
import { HOLD_GRACE_S } from "../../src/query/running";
import { MAX_SESSIONS } from "../../src/query/sessions";
import { processEnv, queryRows, startProcess } from "../helpers/process";
import { startService, type TestService } from "../helpers/service";

// The engine's places (QUERY_CONCURRENCY) and the lifetime of a query's session: waiting, refusing, and freeing a
// place when a client goes away mid-result.

const embedded = !process.env.CLICKHOUSE_URL;
// The wait for a place is 1 s here: the query that outlasts it runs 2 s, the one that must not runs 0.2 s, so
// each outcome holds with most of a second to spare on a busy machine.
const QUEUE_WAIT_MS = 1_000;
const SLOW = "SELECT sum(sleepEachRow(0.5)) FROM numbers(4)"; // 2 s, a row at a time
const SHORT = "SELECT sum(sleepEachRow(0.1)) FROM numbers(2)"; // 0.2 s

describe.skipIf(!embedded)("QUERY_CONCURRENCY", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService(
      { QUERY_PORT: "0", QUERY_CONCURRENCY: "1" },
      { query: { queueWaitMs: QUEUE_WAIT_MS } },
    );
  });
  afterAll(() => service.stop());
  const post = (sql: string) =>
    service.query!.fetch("/?max_block_size=1", { method: "POST", body: sql }).then(async (response) => ({
      status: response.status,
      code: response.headers.get("x-clickhouse-exception-code"),
      text: await response.text(),
    }));
  /** Until the query just posted holds the one place (at most 5 s). */
  const placeTaken = async () => {
    for (let waited = 0; service.query!.engine.running === 0 && waited < 5_000; waited += 10) await Bun.sleep(10);
    expect(service.query!.engine.running).toBe(1);
  };

  test("a query waits for a place, then is refused with TOO_MANY_SIMULTANEOUS_QUERIES; the next one runs", async () => {
    const running = post(SLOW);
    await placeTaken();
    const refused = await post("SELECT 1");
    expect([refused.code, refused.text]).toEqual([
      "202",
      "Code: 202. DB::Exception: Too many simultaneous queries. Maximum: 1. (TOO_MANY_SIMULTANEOUS_QUERIES)\n",
    ]);
    expect((await running).text).toBe("0\n");
    expect(await post("SELECT 1")).toEqual({ status: 200, code: null, text: "1\n" });
    expect(service.query!.engine.running).toBe(0);
  });

  test("a query that waits less than the wait gets the place the running one frees", async () => {
    const first = post(SHORT);
    await placeTaken();
    const second = await post("SELECT 2");
    expect([(await first).text, second.text]).toEqual(["0\n", "2\n"]);
  });

  test("a client that goes away mid-result cancels its query and frees its place", async () => {
    const controller = new AbortController();
    const response = await service.query!.fetch("/", {
      method: "POST",
      body: "SELECT number FROM numbers(100000000)",
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    await reader.read(); // the first chunk arrived: the query is streaming
    expect(service.query!.engine.running).toBe(1);
    controller.abort();
    for (let waited = 0; service.query!.engine.running > 0 && waited < 5_000; waited += 50) await Bun.sleep(50);
    expect(service.query!.engine.running).toBe(0);
    expect((await post("SELECT 3")).text).toBe("3\n");
    expect(service.query!.answers.at(-2)).toMatchObject({ outcome: "failed", status: 499 });
  });
});

describe.skipIf(!embedded)("what a client holds is bounded", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ QUERY_PORT: "0", QUERY_CONCURRENCY: "1", QUERY_TIMEOUT_S: "1" });
  });
  afterAll(() => service.stop());
  const post = (sql: string, search = "") => service.query!.fetch(`/${search}`, { method: "POST", body: sql });

  test("a client that stops reading its result loses its place within QUERY_TIMEOUT_S and HOLD_GRACE_S", async () => {
    const response = await post("SELECT number FROM numbers(100000000)", "?max_block_size=1000");
    const reader = response.body!.getReader();
    await reader.read(); // the first chunk; then the client reads no more
    expect(service.query!.engine.running).toBe(1);
    const started = performance.now();
    while (service.query!.engine.running > 0 && performance.now() - started < (1 + HOLD_GRACE_S + 5) * 1000) {
      await Bun.sleep(100);
    }
    expect(service.query!.engine.running).toBe(0);
    expect(await (await post("SELECT 1")).text()).toBe("1\n"); // the place is free for others
    await reader.cancel();
  }, 20_000);
});

// a service of its own: the one above stops queries after a second (QUERY_TIMEOUT_S=1), which opening a session
// can take on a busy machine
describe.skipIf(!embedded)("idle sessions", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ QUERY_PORT: "0", QUERY_CONCURRENCY: "1" });
  });
  afterAll(() => service.stop());
  const post = (sql: string, search = "") => service.query!.fetch(`/${search}`, { method: "POST", body: sql });

  test("sessions left open for an hour lock nobody out: a new one closes the one idle longest", async () => {
    const id = (n: number) => `held-${n}-${crypto.randomUUID()}`;
    const held = Array.from({ length: MAX_SESSIONS }, (_, n) => id(n));
    for (const session of held) {
      expect((await post("SELECT 1", `?session_id=${session}&session_timeout=3600`)).status).toBe(200);
    }
    const newcomer = await post("SELECT 2", `?session_id=${id(99)}`);
    expect([newcomer.status, await newcomer.text()]).toEqual([200, "2\n"]);
    const oldest = await post("SELECT 1", `?session_id=${held[0]}&session_check=1`);
    expect(oldest.headers.get("x-clickhouse-exception-code")).toBe("372"); // SESSION_NOT_FOUND: it was closed
    const newest = await post("SELECT 1", `?session_id=${held.at(-1)}&session_check=1`);
    expect(newest.status).toBe(200);
  }, 30_000);
});

describe.skipIf(!embedded)("named sessions, every one in a request", () => {
  let service: TestService;
  beforeAll(async () => {
    // a place for each session and one more, so that all of them can be in a request and a newcomer still runs
    service = await startService({ QUERY_PORT: "0", QUERY_CONCURRENCY: String(MAX_SESSIONS + 1) });
  });
  afterAll(() => service.stop());
  const post = (sql: string, search: string) => service.query!.fetch(`/${search}`, { method: "POST", body: sql });

  test("only when all MAX_SESSIONS sessions are in a request is a new one refused; one free, it makes room", async () => {
    const id = (name: string) => `${name}-${crypto.randomUUID()}`;
    const readers: { cancel(): Promise<void> }[] = [];
    try {
      for (let n = 0; n < MAX_SESSIONS; n++) {
        const response = await post(
          "SELECT number FROM numbers(100000000)",
          `?session_id=${id("busy")}&max_block_size=1000`,
        );
        const reader = response.body!.getReader();
        await reader.read(); // the first chunk; the session stays in its request while the rest is unread
        readers.push(reader);
      }
      expect(service.query!.engine.running).toBe(MAX_SESSIONS);
      const newcomer = id("new");
      const refused = await post("SELECT 1", `?session_id=${newcomer}`);
      expect([refused.headers.get("x-clickhouse-exception-code"), await refused.text()]).toEqual([
        "202",
        `Code: 202. DB::Exception: Too many sessions. Maximum: ${MAX_SESSIONS}. (TOO_MANY_SIMULTANEOUS_QUERIES)\n`,
      ]);
      await readers.shift()!.cancel(); // one request ends: its session is idle, and closed for the newcomer
      for (let n = 0; service.query!.engine.running >= MAX_SESSIONS && n < 100; n++) await Bun.sleep(50);
      const admitted = await post("SELECT 2", `?session_id=${newcomer}`);
      expect([admitted.status, await admitted.text()]).toEqual([200, "2\n"]);
    } finally {
      await Promise.all(readers.map((reader) => reader.cancel()));
    }
  }, 30_000);
});

describe.skipIf(!embedded)("the service's process", () => {
  test("on SIGTERM the port closes at once, while ingest still finishes the batch it is receiving; the port is named by the host", async () => {
    const env = processEnv({
      PUBLIC_API_KEYS: "key-1",
      QUERY_PORT: "0",
      QUERY_PASSWORD: "pw",
      SHUTDOWN_TIMEOUT_MS: "20000",
    });
    const service = await startProcess(env);
    try {
      const port = service.started.query!;
      const pinged = () =>
        fetch(`${port}/ping`).then(
          (response) => response.status,
          () => "closed",
        );
      const ping = await fetch(`${port}/ping`);
      expect([ping.status, ping.headers.get("x-clickhouse-server-display-name")]).toEqual([200, hostname()]);
      // a batch still arriving when the signal comes (never idle: a byte every few milliseconds): ingest waits for it
      let ending = false;
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(
            new TextEncoder().encode('{"api_key":"key-1","batch":[{"event":"late","distinct_id":"d"}'),
          );
          while (!ending) {
            await Bun.sleep(50);
            controller.enqueue(new Uint8Array(1024).fill(32));
          }
          controller.enqueue(new TextEncoder().encode("]}"));
          controller.close();
        },
      });
      let answered = false;
      const batch = fetch(`${service.url}/batch/`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        duplex: "half",
      } as RequestInit).then((response) => {
        answered = true;
        return response.status;
      });
      await Bun.sleep(300); // the batch's first bytes are in
      service.child.kill("SIGTERM");
      let answer = await pinged();
      for (let n = 0; answer !== "closed" && n < 100; n++) {
        await Bun.sleep(50);
        answer = await pinged();
      }
      // the port is closed while the batch is still arriving, and the service still running
      expect([answer, answered, service.child.exitCode]).toEqual(["closed", false, null]);
      ending = true;
      expect(await batch).toBe(200);
      expect(await service.child.exited).toBe(0);
      expect(await queryRows<{ n: number }>(env, "SELECT count() AS n FROM {db}.events WHERE event = 'late'")).toEqual([
        { n: 1 },
      ]);
    } finally {
      service.child.kill("SIGKILL");
      await service.child.exited;
    }
  }, 30_000);

  test("queries that take every place leave the write path a thread: a batch is stored while they run", async () => {
    // Each call into the engine holds a worker thread of the runtime until it answers; the service sizes the pool
    // for QUERY_CONCURRENCY queries and the write path (src/engine/workers.ts), or a batch would wait for a query to end.
    const env = processEnv({ PUBLIC_API_KEYS: "key-1", QUERY_PORT: "0", QUERY_PASSWORD: "pw", QUERY_CONCURRENCY: "2" });
    const service = await startProcess(env);
    try {
      const order: string[] = [];
      const auth = { authorization: `Basic ${btoa("default:pw")}` };
      const slow = [1, 2].map(async () => {
        const response = await fetch(service.started.query!, {
          method: "POST",
          body: "SELECT sleep(3)",
          headers: auth,
        });
        order.push(`query ${response.status}`);
      });
      await Bun.sleep(500); // both queries are running
      const batch = await fetch(`${service.url}/batch/`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ api_key: "key-1", batch: [{ event: "e", distinct_id: "d" }] }),
      });
      order.push(`batch ${batch.status}`);
      await Promise.all(slow);
      expect(order).toEqual(["batch 200", "query 200", "query 200"]);
    } finally {
      service.child.kill("SIGTERM");
      await service.child.exited;
    }
  }, 30_000);
});
