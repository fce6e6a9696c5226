/**
 * `npm run bench queries`: what analysts run, on what the service stored. It sends BENCH_EVENTS (2,000,000) events
 * of the `web` traffic (bench/traffic/web.ts), spread over 30 days, through a fresh service (16 senders, batches
 * of 100, each from a public address behind a trusted proxy, so GeoIP locates them), then asks its query port
 * the questions PostHog's insights ask, each on three layouts in the same run:
 *
 * - the baseline: every property read parses `properties`, the JSON text, with `JSONExtract*`;
 * - columns: the same key read from its property column, `mat_<key>` (`MATERIALIZED_PROPERTIES`: the defaults and
 *   the two keys of the product's own these queries read), and web overviews from `sessions`;
 * - typed: the same key read from `properties_typed`, the engine's JSON type (`TYPED_PROPERTIES`), and `sessions`.
 *
 * A person's properties are joined from `persons` on the baseline, read from the event (`PERSONS_ON_EVENTS`) on the
 * other two: from its person property column, `pmat_<key>` (`MATERIALIZED_PERSON_PROPERTIES`), on columns, parsing
 * `person_properties` on typed.
 * Each query runs `ROUNDS` times a layout, in turns, best time kept; the layouts must give the same answer (the
 * bench stops if not), except that person properties as of each event may differ from the join's, as of now. Queries that read no property run on each layout too, as a check of the noise. Then once
 * more a layout for the memory it holds at its peak; one the port refuses (its memory limit) is said, the bench
 * goes on, and exits 1 at the end.
 * Then what counting persons over `events_resolved` costs against `events`, with the load's merges joined, and
 * once they are squashed into `events` (docs/identity.md#squashing-merges).
 * Then, with BENCH_SECONDS loads (30), the `web` load's ingest rate with neither column, with the property
 * columns, and with the typed column, A B C C B A, each on a fresh service seeded with the web file.
 */
import { join } from "node:path";
import { MATERIALIZED_BY_DEFAULT, PERSON_MATERIALIZED_BY_DEFAULT } from "../src/config";
import { average, fmt, type LoadResult, startService, stop } from "./harness";
import { drivePasses } from "./run-load";
import { WebTraffic } from "./traffic/web";
import { webLoad } from "./web";
import { EVENTS_PER_BATCH, KEY, PEOPLE } from "./workload";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 2_000_000);
const DAYS = 30;
const SENDERS = 16;
const ROUNDS = 3;
const PASSWORD = "bench";
/**
 * The load plays a day in about 30 s (2,000,000 events over 30 days at ~2,200 a second), so it settles a day 5 s
 * after its last event: some four hours of its clock, where the service's default is one.
 */
const SETTLE_AFTER_S = 5;

/**
 * How a layout reads a property: as a string ('' when absent or not a string), as a number (NULL when absent);
 * whether it reads sessions from `sessions` (what its view keeps) rather than summing up events; and whether it
 * reads a person's properties from the event (`PERSONS_ON_EVENTS`) rather than joining `persons`, and how: `person`
 * reads a key of them as a string.
 */
interface Layout {
  readonly name: "baseline" | "columns" | "typed";
  readonly text: (key: string) => string;
  readonly number: (key: string) => string;
  readonly sessions: boolean;
  readonly personsOnEvents: boolean;
  readonly person: (key: string) => string;
}

const quote = (key: string) => `'${key.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
const BASELINE: Layout = {
  name: "baseline",
  text: (key) => `JSONExtractString(properties, ${quote(key)})`,
  number: (key) => `JSONExtract(properties, ${quote(key)}, 'Nullable(Float64)')`,
  sessions: false,
  personsOnEvents: false,
  person: (key) => `JSONExtractString(person_properties, ${quote(key)})`,
};
/** The keys the bench's service has columns of: the defaults, and the product's own two its queries read. */
const COLUMN_KEYS = [...MATERIALIZED_BY_DEFAULT, "plan", "seats"];
/** The person property keys it has columns of: the defaults, and any other the person query reads. */
const PERSON_COLUMN_KEYS = [...new Set([...PERSON_MATERIALIZED_BY_DEFAULT, "$initial_os"])];
const COLUMNS: Layout = {
  name: "columns",
  text: (key) => (COLUMN_KEYS.includes(key) ? `\`mat_${key}\`` : BASELINE.text(key)),
  number: (key) => (COLUMN_KEYS.includes(key) ? `toFloat64OrNull(\`mat_${key}\`)` : BASELINE.number(key)),
  sessions: true,
  personsOnEvents: true,
  person: (key) => (PERSON_COLUMN_KEYS.includes(key) ? `\`pmat_${key}\`` : BASELINE.person(key)),
};
const TYPED: Layout = {
  name: "typed",
  text: (key) => `ifNull(properties_typed.\`${key}\`.:String, '')`,
  number: (key) => `properties_typed.\`${key}\`::Nullable(Float64)`,
  sessions: true,
  personsOnEvents: true,
  person: BASELINE.person,
};
const LAYOUTS = [BASELINE, COLUMNS, TYPED] as const;
type LayoutName = Layout["name"];

interface Query {
  readonly name: string;
  readonly sql: (layout: Layout) => string;
  /**
   * A person's properties as each event's flush left them on the new layouts, as they are now through the join:
   * the answers differ where a person changed after an event (as in PostHog), so only the new layouts must agree.
   */
  readonly asOfEvent?: true;
}

/** The insights, as PostHog shapes them, over the last 30 days. */
const QUERIES: readonly Query[] = [
  {
    name: "trend: pageviews a day",
    sql: () =>
      `SELECT toDate(timestamp) AS day, count() AS n FROM events WHERE event = '$pageview' GROUP BY day ORDER BY day`,
  },
  {
    name: "breakdown: pageviews by $browser",
    sql: (p) =>
      `SELECT ${p.text("$browser")} AS browser, count() AS n FROM events WHERE event = '$pageview'
       GROUP BY browser ORDER BY n DESC, browser LIMIT 10`,
  },
  {
    name: "filter on two properties",
    sql: (p) =>
      `SELECT count() AS n FROM events
       WHERE event = 'clicked_plan' AND ${p.text("plan")} = 'pro' AND ${p.text("$device_type")} = 'Desktop'`,
  },
  {
    name: "unique persons a day",
    sql: () => `SELECT toDate(timestamp) AS day, uniq(person_id) AS n FROM events GROUP BY day ORDER BY day`,
  },
  {
    name: "daily mobile pageviews",
    sql: (p) =>
      `SELECT toDate(timestamp) AS day, count() AS n FROM events
       WHERE event = '$pageview' AND ${p.text("$device_type")} = 'Mobile' GROUP BY day ORDER BY day`,
  },
  {
    name: "top paths: views and visitors by $pathname",
    sql: (p) =>
      `SELECT ${p.text("$pathname")} AS path, count() AS views, uniq(person_id) AS visitors FROM events
       WHERE event = '$pageview' GROUP BY path ORDER BY views DESC, path LIMIT 20`,
  },
  {
    name: "breakdown: pageviews by the person's initial OS",
    sql: (p) =>
      p.personsOnEvents
        ? `SELECT ${p.person("$initial_os")} AS os, count() AS n FROM events
           WHERE event = '$pageview' GROUP BY os ORDER BY n DESC, os`
        : `SELECT JSONExtractString(p.properties, '$initial_os') AS os, count() AS n FROM events AS e
           LEFT JOIN (SELECT id, argMax(properties, version) AS properties FROM persons GROUP BY id) AS p
             ON p.id = e.person_id
           WHERE e.event = '$pageview' GROUP BY os ORDER BY n DESC, os`,
    asOfEvent: true,
  },
  {
    name: "average seats by $os",
    sql: (p) =>
      `SELECT ${p.text("$os")} AS os, round(avg(${p.number("seats")}), 6) AS seats FROM events
       WHERE event = 'clicked_plan' GROUP BY os ORDER BY os`,
  },
  {
    name: "funnel: /pricing, /signup, $identify in a session",
    sql: (p) =>
      `SELECT level, count() AS sessions FROM (
         SELECT session_id, windowFunnel(3600)(toDateTime(timestamp),
           event = '$pageview' AND ${p.text("$pathname")} = '/pricing',
           event = '$pageview' AND ${p.text("$pathname")} = '/signup',
           event = '$identify') AS level
         FROM events WHERE session_id != '' GROUP BY session_id)
       GROUP BY level ORDER BY level`,
  },
  {
    name: "retention: days back after the first pageview",
    sql: () =>
      `SELECT first, dateDiff('day', first, day) AS after, uniq(person_id) AS persons FROM (
         SELECT person_id, toDate(timestamp) AS day, min(toDate(timestamp)) OVER (PARTITION BY person_id) AS first
         FROM events WHERE event = '$pageview')
       WHERE after <= 7 GROUP BY first, after ORDER BY first, after`,
  },
  {
    name: "web overview: visitors, views, bounce rate, duration",
    sql: (layout) =>
      `SELECT uniq(distinct_id) AS visitors, sum(views) AS pageviews, count() AS sessions,
         round(avg(if(views = 0, NULL, NOT (views > 1 OR autocaptures > 0 OR duration >= 10))), 6) AS bounce_rate,
         round(avg(duration), 3) AS mean_duration
       FROM (${
         layout.sessions
           ? `SELECT argMinMerge(distinct_id) AS distinct_id, uniqMerge(pageview_count) + uniqMerge(screen_count) AS views,
                uniqMerge(autocapture_count) AS autocaptures, dateDiff('second', min(min_timestamp), max(max_timestamp)) AS duration
              FROM sessions GROUP BY session_id`
           : // the counts as sessions keeps them (uniq of the uuids), so both answers are the same to the last session
             `SELECT argMin(distinct_id, timestamp) AS distinct_id, uniqIf(uuid, event = '$pageview') + uniqIf(uuid, event = '$screen') AS views,
                uniqIf(uuid, event = '$autocapture') AS autocaptures, dateDiff('second', min(timestamp), max(timestamp)) AS duration
              FROM events WHERE session_id != '' GROUP BY session_id`
       })`,
  },
  {
    name: "web overview: top referring domains and UTM sources",
    sql: (layout) =>
      `SELECT domain, source, count() AS sessions FROM (${
        layout.sessions
          ? `SELECT argMinMerge(entry_referring_domain) AS domain, argMinMerge(entry_utm_source) AS source
             FROM sessions GROUP BY session_id HAVING uniqMerge(pageview_count) > 0`
          : `SELECT session_id, argMin(${layout.text("$referring_domain")}, (timestamp, uuid)) AS domain,
               argMin(${layout.text("utm_source")}, (timestamp, uuid)) AS source
             FROM events WHERE event = '$pageview' AND session_id != '' GROUP BY session_id`
      })
       GROUP BY domain, source ORDER BY sessions DESC, domain, source LIMIT 10`,
  },
];

/** What a query reads differently on the new layouts: only property reads are held to the target of ×5. */
function readsOnNew(query: Query): "properties" | "sessions" | "persons" | "the same" {
  const sql = query.sql(TYPED);
  if (sql === query.sql(BASELINE)) return "the same";
  if (query.asOfEvent) return "persons";
  return sql.includes("FROM sessions") ? "sessions" : "properties";
}

/**
 * The share of the baseline's count in the same group on a new layout (answers of `[group, count]` rows): how
 * much person properties as of each event and as of now agree.
 */
function agreement(baseline: string, other: string): number {
  const counts = (answer: string) =>
    new Map((JSON.parse(answer) as [string, string | number][]).map(([k, n]) => [k, Number(n)]));
  const [a, b] = [counts(baseline), counts(other)];
  let same = 0;
  let total = 0;
  for (const [group, n] of a) {
    total += n;
    same += Math.min(n, b.get(group) ?? 0);
  }
  return total === 0 ? 1 : same / total;
}

/** A public IPv4 address (or now and then a private one, as traffic has). */
const address = () =>
  `${1 + Math.floor(Math.random() * 223)}.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}.${1 + Math.floor(Math.random() * 254)}`;

/** Sends `events` events over the last `DAYS` days through the service, `SENDERS` requests at a time; returns events/s. */
async function ingest(url: string, events = EVENTS): Promise<number> {
  const start = Date.now() - DAYS * 86_400_000;
  const traffic = new WebTraffic(start, PEOPLE, undefined, (DAYS * 86_400_000) / events);
  const batches = Math.ceil(events / EVENTS_PER_BATCH);
  let next = 0;
  const started = performance.now();
  const sender = async () => {
    while (next < batches) {
      const b = next++;
      const batch = Array.from({ length: EVENTS_PER_BATCH }, () => traffic.next());
      const body = JSON.stringify({ api_key: KEY, batch, sent_at: batch.at(-1)!.timestamp });
      for (;;) {
        const response = await fetch(`${url}/batch/`, {
          method: "POST",
          body,
          headers: { "Content-Type": "application/json", "X-Forwarded-For": address() },
        });
        if (response.ok) break;
        if (response.status < 500) throw new Error(`batch ${b}: ${response.status} ${await response.text()}`);
        await Bun.sleep(200); // busy: as an SDK, again
      }
      if ((b + 1) % 2_000 === 0) console.log(`  sent ${fmt((b + 1) * EVENTS_PER_BATCH)} events`);
    }
  };
  await Promise.all(Array.from({ length: SENDERS }, sender));
  return (batches * EVENTS_PER_BATCH) / ((performance.now() - started) / 1000);
}

/** A query's run: its answer (JSON rows) or the port's error, and how long it took, in ms. */
type Run = { readonly ms: number } & ({ readonly answer: string } | { readonly error: string });

async function timed(queryUrl: string, sql: string): Promise<Run> {
  const started = performance.now();
  const response = await fetch(`${queryUrl}/?database=default&default_format=JSONCompact`, {
    method: "POST",
    body: sql,
    headers: { Authorization: `Basic ${btoa(`default:${PASSWORD}`)}` },
  });
  const text = await response.text();
  const ms = performance.now() - started;
  if (!response.ok) return { ms, error: `${response.status}: ${text.trim()}` };
  return { ms, answer: JSON.stringify((JSON.parse(text) as { data: unknown }).data) };
}

/**
 * The query run once more, with the most memory it held: the `peak_memory_usage` the port's `system.processes`
 * shows while it runs (sampled, so at most its true peak; the port runs nothing else meanwhile, and does not give
 * the engine a client's query ID), or, if it ran out, what the engine said it would have used. Apart from the
 * timed runs, which the sampling would slow.
 */
async function peakMemory(queryUrl: string, sql: string): Promise<string> {
  let done = false;
  const run = timed(queryUrl, sql).finally(() => {
    done = true;
  });
  let peak = 0;
  while (!done) {
    const sample = await timed(
      queryUrl,
      "SELECT max(peak_memory_usage) FROM system.processes WHERE query_id != queryID()",
    );
    if ("answer" in sample) peak = Math.max(peak, Number((JSON.parse(sample.answer) as [[string]])[0][0]));
    await Bun.sleep(10);
  }
  const ran = await run;
  if ("answer" in ran) return peak === 0 ? "not sampled (too short)" : `${fmt(peak / 2 ** 20)} MiB`;
  return `over the limit (${/would use ([\d.]+ \w+)/.exec(ran.error)?.[1] ?? "failed"})`;
}

async function runQueries(queryUrl: string): Promise<void> {
  const head = LAYOUTS.map((layout) => layout.name.padStart(10)).join(" ");
  console.log(`  ${"query".padEnd(54)} ${head}  faster: columns, typed`);
  const ratios: Record<Exclude<LayoutName, "baseline">, number[]> = { columns: [], typed: [] };
  const failures: string[] = [];
  for (const query of QUERIES) {
    const best: Record<LayoutName, number> = { baseline: Infinity, columns: Infinity, typed: Infinity };
    const failed: Partial<Record<LayoutName, string>> = {};
    const answers = new Map<LayoutName, string>();
    for (let round = 0; round < ROUNDS; round++) {
      // in turns, forwards then backwards: no layout always runs on a warmer cache
      const order = round % 2 === 0 ? LAYOUTS : [...LAYOUTS].reverse();
      for (const layout of order) {
        if (failed[layout.name] !== undefined) continue;
        const run = await timed(queryUrl, query.sql(layout));
        // a query the port refuses (its memory limit, say) is a finding: said, and the bench goes on
        if ("error" in run) failed[layout.name] = run.error;
        else {
          best[layout.name] = Math.min(best[layout.name], run.ms);
          answers.set(layout.name, run.answer);
        }
      }
    }
    const reads = readsOnNew(query);
    const compared = reads === "persons" ? [answers.get("columns"), answers.get("typed")] : [...answers.values()];
    if (new Set(compared).size > 1) {
      throw new Error(`${query.name}: the layouts answer differently:\n${[...new Set(compared)].join("\n")}`);
    }
    const faster = (["columns", "typed"] as const).map((name) => {
      const ratio = best.baseline / best[name];
      if (reads === "properties" && Number.isFinite(ratio)) ratios[name].push(ratio);
      return `×${ratio.toFixed(1)}`;
    });
    const base = answers.get("baseline");
    const agreed = base === undefined || compared[0] === undefined ? 0 : agreement(base, compared[0]);
    const note = {
      properties: "",
      sessions: " (from sessions)",
      persons: ` (person properties on events, as of each event: ${(agreed * 100).toFixed(1)}% as the join reads them now)`,
      "the same": " (the same query)",
    }[reads];
    const times = LAYOUTS.map((layout) =>
      (failed[layout.name] === undefined ? `${fmt(best[layout.name])} ms` : "failed").padStart(10),
    ).join(" ");
    const peaks = [];
    for (const layout of LAYOUTS) peaks.push(await peakMemory(queryUrl, query.sql(layout)));
    console.log(`  ${query.name.padEnd(54)} ${times}  ${faster.join(", ")}${note}; peak memory ${peaks.join(", ")}`);
    for (const [layout, error] of Object.entries(failed)) failures.push(`${query.name}, ${layout}: ${error}`);
  }
  for (const [name, values] of Object.entries(ratios))
    console.log(
      `  property queries, ${name}: ×${Math.min(...values).toFixed(1)}–×${Math.max(...values).toFixed(1)} faster (target ×5 each)`,
    );
  for (const failure of failures) console.log(`  failed: ${failure}`);
  if (failures.length > 0) process.exitCode = 1;
}

/** The active parts of `events`, its partitions (days), and how many of those are in one part (settled). */
async function eventsLayout(queryUrl: string): Promise<{ parts: number; days: number; settled: number }> {
  const run = await timed(
    queryUrl,
    `SELECT sum(n), count(), countIf(n = 1) FROM (
       SELECT partition_id, count() AS n FROM system.parts WHERE table = 'events' AND active GROUP BY partition_id)`,
  );
  if ("error" in run) throw new Error(run.error);
  const [parts, days, settled] = (JSON.parse(run.answer) as [[number | string, number | string, number | string]])[0];
  return { parts: Number(parts), days: Number(days), settled: Number(settled) };
}

/**
 * Waits while the engine merges the parts of `events` (their count fell within the last 30 s), 10 minutes at most:
 * what an analyst reads once a load is over, where `FINAL` has little left to merge.
 */
async function merged(queryUrl: string): Promise<void> {
  const started = performance.now();
  let last = (await eventsLayout(queryUrl)).parts;
  let steadySince = performance.now();
  while (performance.now() - steadySince < 30_000 && performance.now() - started < 600_000) {
    await Bun.sleep(5_000);
    const now = (await eventsLayout(queryUrl)).parts;
    if (now < last) steadySince = performance.now();
    last = now;
  }
  console.log(`  merges: events in ${last} active parts after ${fmt((performance.now() - started) / 1000)} s`);
}

/**
 * What counting persons over `events_resolved` (deduplicated, merges applied) costs against over `events`, and how
 * much of it is the deduplication alone (`events FINAL`), with the parts `events` is in as it runs (FINAL merges
 * the ranges of the sorting key that several parts hold: the more unmerged parts, the more it reads and merges).
 * `when` says which: with the load's merges still joined, or once squashed into `events`.
 */
async function resolvedTax(queryUrl: string, when: string): Promise<void> {
  const sql = (table: string) =>
    `SELECT toDate(timestamp) AS day, uniq(person_id) AS n FROM ${table} GROUP BY day ORDER BY day`;
  const tables = ["events", "events FINAL", "events_resolved"] as const;
  const best: Record<(typeof tables)[number], number> = {
    events: Infinity,
    "events FINAL": Infinity,
    events_resolved: Infinity,
  };
  const before = await eventsLayout(queryUrl);
  for (let round = 0; round < ROUNDS; round++) {
    for (const table of round % 2 === 0 ? tables : [...tables].reverse()) {
      const run = await timed(queryUrl, sql(table));
      if ("error" in run) throw new Error(`${run.error}\n${sql(table)}`);
      best[table] = Math.min(best[table], run.ms);
    }
  }
  const ratio = (table: keyof typeof best) => `×${(best[table] / best.events).toFixed(2)}`;
  console.log(
    `  ${when}: unique persons a day over events_resolved ${fmt(best.events_resolved)} ms, over events ${fmt(best.events)} ms: ${ratio("events_resolved")} (target ≤ ×1.5)`,
  );
  console.log(
    `    of which FINAL alone (over events FINAL ${fmt(best["events FINAL"])} ms): ${ratio("events FINAL")}; events in ${before.parts} active parts (${before.settled} of ${before.days} days in one) before, ${(await eventsLayout(queryUrl)).parts} after`,
  );
}

/**
 * The `web` load's rate with none of the new columns, with the property columns the bench queries, and with the
 * typed column alone: A B C C B A, each on a fresh service.
 */
async function ingestCost(work: string): Promise<void> {
  const variants = {
    none: webLoad("web, no property columns", { MATERIALIZED_PROPERTIES: "none", TYPED_PROPERTIES: "0" }),
    columns: webLoad("web, property columns", {
      MATERIALIZED_PROPERTIES: COLUMN_KEYS.join(","),
      TYPED_PROPERTIES: "0",
    }),
    typed: webLoad("web, TYPED_PROPERTIES=1", { MATERIALIZED_PROPERTIES: "none", TYPED_PROPERTIES: "1" }),
  };
  const file = join(work, "web.jsonl");
  variants.none.write(file);
  const rates: Record<keyof typeof variants, number[]> = { none: [], columns: [], typed: [] };
  for (const [i, variant] of (["none", "columns", "typed", "typed", "columns", "none"] as const).entries()) {
    const { measured }: { measured: LoadResult } = await drivePasses(join(work, `cost-${i}`), variants[variant], file);
    console.log(`  ${variants[variant].label}: ${fmt(measured.rate)} events/s, p99 ${measured.latency.p99}`);
    rates[variant].push(measured.rate);
  }
  for (const variant of ["columns", "typed"] as const)
    console.log(
      `  ingest, ${variants[variant].label} against none: ×${(average(rates[variant]) / average(rates.none)).toFixed(2)} (target ≥ ×0.90)`,
    );
}

export async function runQueriesBench(work: string): Promise<void> {
  console.log(`bench queries: ${fmt(EVENTS)} web events over ${DAYS} days from ${fmt(PEOPLE)} people`);
  const dataDir = join(work, "service");
  const settings = {
    QUERY_PORT: "0",
    QUERY_PASSWORD: PASSWORD,
    TRUSTED_PROXIES: "127.0.0.1",
    TYPED_PROPERTIES: "1",
    MATERIALIZED_PROPERTIES: COLUMN_KEYS.join(","),
    MATERIALIZED_PERSON_PROPERTIES: PERSON_COLUMN_KEYS.join(","),
    PERSONS_ON_EVENTS: "1",
    SETTLE_AFTER_S: String(SETTLE_AFTER_S),
  };
  const service = await startService(dataDir, settings);
  try {
    const rate = await ingest(service.url);
    console.log(`  ingested at ${fmt(rate)} events/s`);
    await runQueries(service.queryUrl!);
    await resolvedTax(service.queryUrl!, "the load's merges joined");
  } finally {
    await stop(service);
  }
  await squashed(dataDir, settings);
  await settleCost(work, settings);
  await ingestCost(work);
}

/**
 * What settling days costs the load: the rate of `EVENTS / 10` events over the same 30 days on fresh services with
 * `SETTLE_AFTER_S` as above and 0 (days left to the engine's merges), A B B A.
 */
async function settleCost(work: string, settings: Record<string, string>): Promise<void> {
  const events = Math.ceil(EVENTS / 10);
  const rates: Record<"settled" | "unsettled", number[]> = { settled: [], unsettled: [] };
  for (const [i, variant] of (["settled", "unsettled", "unsettled", "settled"] as const).entries()) {
    const service = await startService(join(work, `settle-${i}`), {
      ...settings,
      SETTLE_AFTER_S: variant === "settled" ? String(SETTLE_AFTER_S) : "0",
    });
    try {
      const rate = await ingest(service.url, events);
      const { parts, days, settled } = await eventsLayout(service.queryUrl!);
      console.log(
        `  ${fmt(events)} events over ${DAYS} days, SETTLE_AFTER_S=${variant === "settled" ? SETTLE_AFTER_S : 0}: ${fmt(rate)} events/s; ${parts} parts, ${settled} of ${days} days in one`,
      );
      rates[variant].push(rate);
    } finally {
      await stop(service);
    }
  }
  console.log(
    `  ingest, days settled against not: ×${(average(rates.settled) / average(rates.unsettled)).toFixed(2)} (target ≥ ×0.90)`,
  );
}

/**
 * The squash the service would run an hour after the load (`SQUASH_GRACE_S`), run by the service started anew on
 * the same data with no grace; then `events_resolved` again, as the load left the parts of `events` and once the
 * engine has merged them.
 */
async function squashed(dataDir: string, settings: Record<string, string>): Promise<void> {
  const service = await startService(dataDir, { ...settings, SQUASH_INTERVAL_S: "5", SQUASH_GRACE_S: "0" });
  try {
    const deadline = performance.now() + 30 * 60_000;
    const logged = () => service.output().match(/.*"merges squashed".*/)?.[0];
    for (; logged() === undefined; await Bun.sleep(1_000)) {
      if (performance.now() > deadline) throw new Error("the service did not squash within 30 minutes");
    }
    const line = logged()!;
    const { persons, seconds } = JSON.parse(line) as { persons: number; seconds: number };
    console.log(`  squashed: the events of ${fmt(persons)} persons merged away moved in ${seconds} s`);
    await resolvedTax(service.queryUrl!, "once squashed");
    await merged(service.queryUrl!);
    await resolvedTax(service.queryUrl!, "once squashed and merged");
  } finally {
    await stop(service);
  }
}
