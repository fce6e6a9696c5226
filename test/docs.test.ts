import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { withCurrentTable } from "../scripts/docs";
import { MATERIALIZED_BY_DEFAULT, SETTINGS } from "../src/config";
import { ERROR_CODES, IngestError } from "../src/contract/errors";
import { workerThreadsFor } from "../src/engine/restart";
import { CODES, QueryError } from "../src/query/errors";
import { MAX_INSERT_BYTES, MAX_WAIT_BUFFER_BYTES } from "../src/query/http";
import { FLUSH_INTERVAL_MS, QUERY_LOG_ROWS } from "../src/query/log";
import { QUEUE_WAIT_MS } from "../src/query/options";
import { DEFAULT_SESSION_TIMEOUT_S, MAX_SESSION_TIMEOUT_S } from "../src/query/params";
import { HOLD_GRACE_S } from "../src/query/running";
import { MAX_SESSIONS, MAX_WAITING } from "../src/query/sessions";
import { AST_LIMITS, limitSettings, MAX_QUERY_BYTES, QUERY_PRIORITY } from "../src/query/settings";
import { WRITE_PATH_PRIORITY } from "../src/storage/clickhouse";
import { createSchema } from "../src/storage/schema";
import { ENTRY_PROPERTIES } from "../src/storage/schema/sessions";
import { docStatements } from "./helpers/doc-sql";
import { send, startService, type TestService } from "./helpers/service";

// The docs are part of the product: the README's configuration table is the settings declaration's, every link
// between the docs (and every docs/ reference in a source comment) lands on a file and a heading that exist, no
// doc points outside the repository, and the SQL the README and the changelog show runs.

const ROOT = resolve(import.meta.dir, "..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const DOCS = [
  "README.md",
  "CHANGELOG.md",
  "bench/README.md",
  ...readdirSync(join(ROOT, "docs")).map((f) => `docs/${f}`),
];

/** GitHub's anchor for a heading: lower-cased, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replaceAll(" ", "-");

function anchorsOf(path: string): Set<string> {
  const text = read(path).replace(/```[\s\S]*?```/g, "");
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
}

/** Where a link from `from` lands: a file in the repository and maybe a heading, or why it does not. */
function checkLink(from: string, target: string): string | undefined {
  const [file = "", anchor] = target.split("#");
  const path = file === "" ? from : relative(ROOT, resolve(ROOT, dirname(from), file));
  if (path.startsWith("..")) return `${from} → ${target}: outside the repository`;
  if (!existsSync(join(ROOT, path))) return `${from} → ${target}: no such file`;
  if (anchor !== undefined && path.endsWith(".md") && !anchorsOf(path).has(anchor)) {
    return `${from} → ${target}: no such heading in ${path}`;
  }
  return undefined;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => `${dir}/${file}`);
}

describe("docs", () => {
  test("the README's configuration table is the one the settings declaration gives (npm run docs writes it)", () => {
    const readme = read("README.md");
    expect(withCurrentTable(readme)).toBe(readme);
  });

  test("every relative link in the docs lands on a file and a heading that exist, inside the repository", () => {
    const broken: string[] = [];
    for (const doc of DOCS) {
      const text = read(doc).replace(/```[\s\S]*?```/g, "");
      const targets = [
        ...[...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!),
        ...[...text.matchAll(/^\[[^\]]+\]: (\S+)$/gm)].map((m) => m[1]!),
      ].filter((target) => !/^[a-z]+:/.test(target));
      for (const target of targets) {
        const problem = checkLink(doc, target);
        if (problem) broken.push(problem);
      }
    }
    expect(broken).toEqual([]);
  });

  test("every docs/ reference in a source comment names a heading that exists", () => {
    const broken: string[] = [];
    for (const file of [...sourceFiles("src"), ...sourceFiles("scripts")]) {
      for (const [, target] of read(file).matchAll(/\b(docs\/[\w-]+\.md(?:#[\w-]+)?)/g)) {
        const problem = checkLink("README.md", target!);
        if (problem) broken.push(`${file}: ${problem}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test("nothing points at the contract's own file, which a clone of the repository does not have", () => {
    const files = [...DOCS, ...sourceFiles("src"), ...sourceFiles("test")].filter((f) => f !== "test/docs.test.ts");
    for (const file of files) {
      expect([file, /SPEC\.md|shared\/|SPEC §/.test(read(file))]).toEqual([file, false]);
    }
  });

  test("behaviour.md's table of errors has every code, with its status", () => {
    const errors = read("docs/behaviour.md")
      .split(/^## /m)
      .find((section) => section.startsWith("Errors\n"))!;
    const documented = [...errors.matchAll(/^\| `([a-z_]+)` +\| (\d{3}) /gm)].map((m) => [m[1], Number(m[2])]);
    expect(documented.sort()).toEqual(ERROR_CODES.map((code) => [code, new IngestError(code, "").status]).sort());
  });

  test("docs/query.md's table of where each claim is tested names tests that exist, and every section of the doc", () => {
    const doc = read("docs/query.md");
    const [body = "", mapping = ""] = doc.split(/^## Where each claim is tested$/m);
    const sections = [...body.matchAll(/^#{1,3} (.+)$/gm)].map((m) => m[1]!);
    const rows = [...mapping.matchAll(/^\| ([^|]+?) +\| (.+?) +\|$/gm)].map((m) => [m[1]!, m[2]!] as const).slice(2);
    const missing: string[] = [];
    for (const [, tests] of rows) {
      // `file` "start of a test's name", "another"; `file2` …
      for (const [, file, names] of tests.matchAll(/`([\w/-]+)` ((?:"[^"]+"(?:, )?)+)/g)) {
        const text = read(`test/${file}.test.ts`);
        const titles = [...text.matchAll(/\btest(?:\.\w+\((?:[^()]|\([^()]*\))*\))?\(\s*"((?:[^"\\]|\\.)*)"/g)].map(
          (m) => m[1]!,
        );
        for (const [, name] of names!.matchAll(/"([^"]+)"/g)) {
          if (!titles.some((title) => title.startsWith(name!))) missing.push(`${file}: ${name}`);
        }
      }
    }
    expect(missing).toEqual([]);
    // every section but the threat and the layers (under "What the port refuses") has its row
    const covered = new Set(rows.map(([section]) => section));
    expect(sections.filter((section) => !covered.has(section))).toEqual(["The threat", "The layers"]);
  });

  test("docs/query.md's figures are the code's: sizes, times, counts, priorities, error codes and statuses", () => {
    // each figure as the doc states it (its text joined into one line), and the constant of src/ it must be
    const doc = read("docs/query.md").replace(/\s+/g, " ");
    const MiB = 2 ** 20;
    const limits = limitSettings({ timeoutS: 1, maxThreads: 1, maxMemoryBytes: 1, maxResultBytes: 1 });
    const figures: [RegExp, number][] = [
      [/at most (\d+) MiB of query text/, MAX_QUERY_BYTES / MiB],
      [/(\d+) MiB of INSERT data, inflated/, MAX_INSERT_BYTES / MiB],
      [/`wait_end_of_query=1` buffers the result \(up to (\d+) MiB\)/, MAX_WAIT_BUFFER_BYTES / MiB],
      [/when none is free the query waits up to (\d+) s/, QUEUE_WAIT_MS / 1000],
      [/At most (\d+) wait\./, MAX_WAITING],
      [/At most (\d+) are kept/, MAX_SESSIONS],
      [/only when all (\d+) are in a request is it refused/, MAX_SESSIONS],
      [/sessions are at most (\d+), each/, MAX_SESSIONS],
      [/a new session past (\d+) closes the one idle longest/, MAX_SESSIONS],
      [/`session_timeout` \((\d+) s by default/, DEFAULT_SESSION_TIMEOUT_S],
      [/s by default, at most (\d+) s\)/, MAX_SESSION_TIMEOUT_S],
      [/`session_timeout` \(at most (\d+) s\)/, MAX_SESSION_TIMEOUT_S],
      [/each kept at most (\d+) s \(`session_timeout`\)/, MAX_SESSION_TIMEOUT_S],
      [/written about once (a) second/, FLUSH_INTERVAL_MS / 1000],
      [/the last ([\d,]+) or so rows kept in memory/, QUERY_LOG_ROWS],
      [/`QUERY_TIMEOUT_S` plus (\d+) s after the query started/, HOLD_GRACE_S],
      [/place is taken back `QUERY_TIMEOUT_S` \+ (\d+) s/, HOLD_GRACE_S],
      [/`priority = (\d+)` \(the write path runs at/, QUERY_PRIORITY],
      [/\(the write path runs at (\d+),/, WRITE_PATH_PRIORITY],
      [/`UV_THREADPOOL_SIZE` set to `QUERY_CONCURRENCY \+ (\d+)`/, workerThreadsFor(0)],
      [/the engine's defaults, ([\d,]+), [\d,]+ and [\d,]+, which the port sets/, AST_LIMITS.max_ast_depth],
      [/the engine's defaults, [\d,]+, ([\d,]+) and [\d,]+, which the port sets/, AST_LIMITS.max_ast_elements],
      [/the engine's defaults, [\d,]+, [\d,]+ and ([\d,]+), which the port sets/, AST_LIMITS.max_expanded_ast_elements],
      [/`mutations_sync = (\d)`/, Number(limits.mutations_sync)],
      [/`lightweight_deletes_sync` are (\d); a client may set/, Number(limits.lightweight_deletes_sync)],
    ];
    const figure = (text: string) => (text === "a" ? 1 : Number(text.replaceAll(",", "")));
    const wrong = figures
      .map(([pattern, expected]) => [String(pattern), doc.match(pattern)?.[1], expected] as const)
      .filter(([, found, expected]) => found === undefined || figure(found) !== expected);
    expect(wrong).toEqual([]);
    // the README's configuration table says one of them too, in QUERY_CONCURRENCY's help
    expect(SETTINGS.queryConcurrency.help).toContain(`wait up to ${QUEUE_WAIT_MS / 1000} s`);

    // every error the doc names with its code: `NAME` (N), or `NAME`, N
    const named = [...doc.matchAll(/`([A-Z][A-Z0-9_]+)`(?: \(|, )(\d+)\b/g)].map((m) => [m[1]!, Number(m[2])]);
    expect(named.length).toBeGreaterThan(10);
    expect(named.filter(([name, code]) => CODES[name as keyof typeof CODES] !== code)).toEqual([]);
    // the statuses it gives them, as a server does
    const [, statuses = ""] = doc.match(/with the status a ClickHouse server gives that code \(([^)]+)\)/) ?? [];
    expect(statuses).toBe(
      "400 for syntax, 404 for unknown tables, 403 for authentication, 408 for a timeout, 500 otherwise, `READONLY` included",
    );
    const status = (type: string) => new QueryError(0, type, "").status;
    expect(
      [
        "SYNTAX_ERROR",
        "UNKNOWN_TABLE",
        "AUTHENTICATION_FAILED",
        "TIMEOUT_EXCEEDED",
        "READONLY",
        "UNKNOWN_EXCEPTION",
      ].map(status),
    ).toEqual([400, 404, 403, 408, 500, 500]);
    expect(doc).toContain("(`compress=1`, `decompress=1`) is refused (501)");
    expect(status("NOT_IMPLEMENTED")).toBe(501);
  });

  test("the README stays a user's ten-minute read", () => {
    // 314, and the three rows of ADMIN_PORT, ADMIN_TOKEN and BACKUP_DIR in the generated settings table
    expect(read("README.md").split("\n").length).toBeLessThanOrEqual(317);
  });
});

describe("the SQL the docs show", () => {
  const KEY = "key-1";
  let service: TestService;

  beforeAll(async () => {
    // docs/analytics.md reads both
    service = await startService({
      PUBLIC_API_KEYS: KEY,
      TYPED_PROPERTIES: "1",
      PERSONS_ON_EVENTS: "1",
      MATERIALIZED_PROPERTIES: [...MATERIALIZED_BY_DEFAULT, "plan", "seats"].join(","), // as analytics.md's example
    });
    const batch = [
      {
        event: "$pageview",
        distinct_id: "anon-1",
        properties: {
          $session_id: "s1",
          $current_url: "https://a/1",
          $browser: "Chrome",
          $referring_domain: "news.example",
          utm_campaign: "spring",
          $set_once: { $initial_os: "Mac OS X" },
        },
      },
      { event: "$identify", distinct_id: "user-1", properties: { $anon_distinct_id: "anon-1", $set: { plan: "pro" } } },
      { event: "$pageview", distinct_id: "user-1", properties: { $session_id: "s1", $current_url: "https://a/2" } },
      { event: "clicked", distinct_id: "user-2", properties: { $session_id: "s2" } },
      { event: "clicked_plan", distinct_id: "user-2", properties: { seats: 5 } },
      { event: "clicked_plan", distinct_id: "user-2", properties: { seats: 2.5 } },
      { event: "checkout", distinct_id: "user-2", properties: { plan: { tier: "pro" } } },
    ].map((event, i) => ({ ...event, uuid: crypto.randomUUID(), timestamp: new Date(Date.now() + i).toISOString() }));
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
  });
  afterAll(() => service.stop());

  /** The statements of a doc's `sql` blocks, its tables named with the test's database. */
  const statements = (doc: string) => docStatements(doc, (table) => service.db.table(table));

  test("the README's queries run and find what was sent", async () => {
    const [events, daily, persons, sessions, ...rest] = statements("README.md");
    expect(rest).toEqual([]);
    // anon-1 and user-1 are one person, user-2 another, whichever person their events were stored with
    expect((await service.db.rows<{ persons: string | number }>(daily!)).map((row) => Number(row.persons))).toEqual([
      2,
    ]);
    const browsers = await service.db.rows<{ browser: string; "count()": string | number }>(events!);
    expect(browsers.map((row) => [row.browser, Number(row["count()"])]).sort()).toEqual([
      ["", 1],
      ["Chrome", 1],
    ]);
    const people = await service.db.rows<{ ids: string[] }>(persons!);
    expect(people.map((person) => person.ids.sort())).toContainEqual(["anon-1", "user-1"]);
    // s1: two pageviews from news.example, not a bounce; s2: no pageview, so no bounce either way (NULL)
    const sources = await service.db.rows<Record<string, unknown>>(sessions!);
    const bySource = sources.map((s) => [s.source, Number(s.sessions), Number(s.views), s.bounce_rate]);
    expect(bySource.sort()).toEqual([
      ["", 1, 0, null],
      ["news.example", 1, 2, 0],
    ]);
  });

  test("docs/analytics.md's queries run and read the property columns and the typed properties", async () => {
    const [columnBrowsers, columnSeats, browsers, seats, tier, daily, plans, personOs, overview, entries, ...rest] =
      statements("docs/analytics.md");
    expect(rest).toEqual([]);
    // anon-1 and user-1 are one person, user-2 another, on the one day they were sent
    expect((await service.db.rows<{ persons: string | number }>(daily!)).map((row) => Number(row.persons))).toEqual([
      2,
    ]);
    // 64-bit counts are numbers from the embedded engine and strings from a server: compared as numbers
    const numbers = (row: Record<string, unknown>) =>
      Object.fromEntries(
        Object.entries(row).map(([k, v]) => [k, typeof v === "string" && /^\d+$/.test(v) ? Number(v) : v]),
      );
    const bySource = (await service.db.rows<Record<string, unknown>>(overview!))
      .map(numbers)
      .sort((a, b) => String(a.source).localeCompare(String(b.source)));
    expect(bySource).toEqual([
      { source: "", sessions: 1, visitors: 1, views: 0, bounce_rate: null, duration_s: 0 },
      { source: "news.example", sessions: 1, visitors: 1, views: 2, bounce_rate: 0, duration_s: 0 },
    ]);
    expect((await service.db.rows<Record<string, unknown>>(entries!)).map(numbers)).toEqual([
      { entry_pathname: "/1", campaign: "spring", sessions: 1 },
    ]);
    // one flush: anon-1's pageview is stored with the person its $identify made, plan pro; user-2 has no plan
    expect((await service.db.rows<Record<string, unknown>>(plans!)).map(numbers)).toEqual([
      { plan: "", events: 4 },
      { plan: "pro", events: 3 },
    ]);
    // the person's $set_once, on both pageviews of anon-1 and user-1's one person, read from its column
    expect((await service.db.rows<Record<string, unknown>>(personOs!)).map(numbers)).toEqual([
      { os: "Mac OS X", n: 2 },
    ]);
    expect((await service.db.rows<Record<string, unknown>>(columnBrowsers!)).map(numbers)).toContainEqual({
      browser: "Chrome",
      "count()": 1,
    });
    expect((await service.db.rows<Record<string, unknown>>(columnSeats!)).map((row) => Object.values(row))).toEqual([
      ["", 3.75],
    ]);
    expect(await service.db.rows(browsers!)).toContainEqual({ browser: "Chrome", "count()": 1 });
    expect(Object.values((await service.db.rows(seats!))[0]!)).toEqual([3.75]);
    expect(Object.values((await service.db.rows(tier!))[0]!)).toEqual(["pro"]);
  });

  test("the changelog's rebuild of sessions on a cluster, run on one server, makes what the view wrote", async () => {
    const [dropView, dropTable, dropLocal, viewQuery] = statements("CHANGELOG.md");
    expect([dropView, dropTable, dropLocal]).toEqual([
      `DROP TABLE ${service.db.table("sessions_mv")} ON CLUSTER c`,
      `DROP TABLE ${service.db.table("sessions")} ON CLUSTER c`,
      "DROP TABLE sessions_local ON CLUSTER c SYNC",
    ]);
    const read = () =>
      service.db.rows(
        `SELECT session_id, ${Object.keys(ENTRY_PROPERTIES)
          .map((column) => `argMinMerge(${column}) AS ${column}`)
          .join(", ")}, toString(uniqMerge(autocapture_count)) AS autocaptures,
                toString(uniqMerge(screen_count)) AS screens, toString(uniqMerge(pageview_count)) AS pageviews,
                toString(uniqMerge(event_count)) AS events, argMinMerge(distinct_id) AS first,
                argMinMerge(entry_url) AS entry_url, argMaxMerge(exit_url) AS exit_url
         FROM ${service.db.table("sessions")} GROUP BY session_id ORDER BY session_id`,
      );
    const written = await read();
    expect(written).toContainEqual(expect.objectContaining({ session_id: "s1", pageviews: "2" }));
    // one server has the one table: `sessions` is what `sessions_local` is to a shard
    for (const drop of [dropView!, dropTable!]) await service.db.command(drop.replace(" ON CLUSTER c", ""));
    await createSchema(service.db); // the start
    expect(await read()).toEqual([]);
    // an analyst's connection is on the service's database; the test's is not
    const ours = viewQuery!.replace("currentDatabase()", `'${service.config.clickhouse.database}'`);
    expect(ours).not.toBe(viewQuery);
    const [{ as_select }] = (await service.db.rows<{ as_select: string }>(ours)) as [{ as_select: string }];
    const backfill = `INSERT INTO ${service.db.table("sessions")} ${as_select}`;
    await service.db.command(backfill);
    expect(await read()).toEqual(written);
    await service.db.command(backfill); // again, or over what the view wrote since: nothing counts twice
    expect(await read()).toEqual(written);
  });
});
