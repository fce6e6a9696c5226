/**
 * `npm run bench [web|web-compare|http|mix|new|persons|query|queries|instances|geoip|backup]`: the service as its own process on a
 * fresh data directory, driven by wrk (a separate load generator) with batches of 100 events, against the engine's
 * own insert rate for the same rows, measured in the same run. Never part of .ci/run.
 *
 *   web      the real traffic: posthog-js's events as recorded (bench/record.ts), from 10,000 people browsing a
 *            site, with posthog-node's from the backend, each event unique; the file sent once before the measured load (bench/web.ts)
 *   web-compare  the web load with the defaults, with PERSON_AUTO_PROPERTIES=0 GEOIP=0, and the http load, A B C C B A
 *   http     distinct IDs from 10,000 people, 2% $identify with $anon_distinct_id, $set and $set_once
 *   mix      identity-heavy: 20% $identify / $create_alias / $set events
 *   new      every event from a distinct ID never seen before (a busy public site), with a person each and personless
 *            (posthog-js's default), against known visitors in the same run
 *   persons  the http load over 10,000 and over 1,000,000 known persons (seeded through the service first),
 *            each measured cold (just restarted) and warm (right after)
 *   query    the http load with and without a client looping a heavy scan on the query port
 *   queries  what analysts run (PostHog's insights) on BENCH_EVENTS web events, each on the baseline layout and the
 *            typed one, and the web load's rate with and without the typed column (bench/queries.ts)
 *   instances  the mix load over 1, 2 and 3 instances sharing one engine (its writable query port)
 *   backup   backup and restore of BENCH_BACKUP_EVENTS imported events timed, then the http load with and without
 *            backups looping through the admin door (bench/backup.ts)
 *
 * The service's own settings pass through (e.g. FLUSH_LINGER_MS=0) and are printed first.
 * BENCH_SECONDS (30) and BENCH_CONNECTIONS (16) set the load; BENCH_PEOPLE (1,000,000) the large population of
 * `persons`, BENCH_ROUNDS (2) how many times its populations take turns, and BENCH_DATA=<dir> where it keeps
 * its seeded data for the next run. BENCH_PROFILE=<dir> writes the service's CPU profile there (Bun's
 * --cpu-prof-md). The CPU the service spent is printed per kind of thread: the JavaScript thread against the
 * engine's own threads. Every load prints the identity rows it inserted per event, by table (bench/rows.ts).
 * wrk comes from Debian (`apt-get install wrk`); this script installs it when it can (as root), else says so.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { restartFor } from "../src/engine";
import { runBackupBench } from "./backup";
import { runGeoIp } from "./geoip";
import { ensureWrk, fmt, running, stop, TUNING } from "./harness";
import { runImportBench } from "./import";
import { runInstances } from "./instances";
import { runPersons } from "./persons";
import { runQueriesBench } from "./queries";
import { runQuery } from "./query";
import { runLoad, syntheticLoad } from "./run-load";
import { runWebCompare, webLoad } from "./web";
import { PEOPLE } from "./workload";

// the allocator as the service runs it, for this process and the baselines it starts (src/engine/restart.ts)
restartFor();

const MODE = (process.argv[2] ?? "http") as
  | "web"
  | "web-compare"
  | "http"
  | "mix"
  | "new"
  | "persons"
  | "query"
  | "queries"
  | "instances"
  | "import"
  | "geoip"
  | "backup";

/**
 * new: new visitors against known ones, in one run: each a fresh service, known visitors (the `http` load) first
 * and last, new visitors with a person each, and new visitors as posthog-js sends them by default
 * (`$process_person_profile: false`), printed as ratios to the known visitors' mean rate.
 */
async function runNewVisitors(work: string): Promise<void> {
  const known = { shape: "known", people: PEOPLE } as const;
  const first = await runLoad(join(work, "known-1"), syntheticLoad(known, "http (known visitors)"));
  const profiles = await runLoad(
    join(work, "new"),
    syntheticLoad({ shape: "new", people: PEOPLE }, "new (a person each)"),
  );
  const personless = await runLoad(
    join(work, "personless"),
    syntheticLoad({ shape: "new", people: PEOPLE, personless: true }, "new (personless)"),
  );
  const last = await runLoad(join(work, "known-2"), syntheticLoad(known, "http (known visitors)"));
  const baseline = (first + last) / 2;
  console.log(
    `new visitors against known ones (${fmt(baseline)} events/s): a person each ${(profiles / baseline).toFixed(2)}, ` +
      `personless ${(personless / baseline).toFixed(2)}`,
  );
}

if (MODE !== "import") ensureWrk();
const settings = Object.entries(TUNING).map(([name, value]) => `${name}=${value}`);
console.log(`service settings: ${settings.length > 0 ? settings.join(" ") : "defaults"}`);
const work = mkdtempSync(join(tmpdir(), "ingest-bench-"));
try {
  if (MODE === "persons") await runPersons(work);
  else if (MODE === "query") await runQuery(work);
  else if (MODE === "queries") await runQueriesBench(work);
  else if (MODE === "instances") await runInstances(work);
  else if (MODE === "import") await runImportBench(work);
  else if (MODE === "new") await runNewVisitors(work);
  else if (MODE === "geoip") await runGeoIp(work);
  else if (MODE === "backup") await runBackupBench(work);
  else if (MODE === "web") await runLoad(work, webLoad());
  else if (MODE === "web-compare") await runWebCompare(work);
  else await runLoad(work, syntheticLoad({ shape: MODE === "http" ? "known" : MODE, people: PEOPLE }, MODE));
} finally {
  for (const service of running) await stop(service);
  // BENCH_KEEP=1 leaves the data behind, to query it after (`DATA_DIR=<work>/service ingest query ...`)
  if (process.env.BENCH_KEEP === "1") console.log(`kept: ${work}`);
  else rmSync(work, { recursive: true, force: true });
}
