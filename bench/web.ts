/**
 * `npm run bench web`: the load that is the real traffic (bench/traffic/web.ts: posthog-js's events as recorded,
 * from 10,000 people, with posthog-node's), each request from a public address behind a trusted proxy (GeoIP
 * finds it), every event unique however often wrk replays the file. The file is sent once before the measured
 * load, so that the load is the steady state (every person seen; new ones only from sign-ups), and the identity
 * rows per event of both are printed.
 *
 * `npm run bench web-compare`: the web load with the service's defaults, without the person's automatic
 * properties and GeoIP (`PERSON_AUTO_PROPERTIES=0 GEOIP=0`), and the `http` load, A B C C B A, each on a fresh
 * service seeded with its file first (no engine baselines); then the ratios defaults/off and web/http.
 */
import { join } from "node:path";
import { average, fmt, type LoadResult } from "./harness";
import { IDENTITY_TABLES } from "./rows";
import { drivePasses, type Load, printPasses, syntheticLoad } from "./run-load";
import { writeWebBodies } from "./traffic/web";
import { PEOPLE } from "./workload";

/** 40,000 events (~93 MB): 27 minutes of the site, about 2,700 visits, before the file starts over. */
const WEB_BODIES = 400;

/** The web load; `service` adds to its settings. */
export function webLoad(label = "web", service: Readonly<Record<string, string>> = {}): Load {
  return {
    label,
    write: (file) => writeWebBodies(file, WEB_BODIES),
    // browsers post from public addresses: through a proxy the service trusts, as bench/geoip.ts does
    service: { TRUSTED_PROXIES: "127.0.0.1", ...service },
    wrk: { BENCH_UNIQUE: "1", BENCH_FORWARDED_FOR: "1" },
    warmUpPass: true,
  };
}

type Variant = "defaults" | "off" | "http";

const VARIANTS: Readonly<Record<Variant, Load>> = {
  defaults: webLoad("web, defaults"),
  off: webLoad("web, PERSON_AUTO_PROPERTIES=0 GEOIP=0", { PERSON_AUTO_PROPERTIES: "0", GEOIP: "0" }),
  http: { ...syntheticLoad({ shape: "known", people: PEOPLE }, "http"), warmUpPass: true },
};

/** Rows per event by table, summed over the loads' measured passes. */
function rowsPerEvent(results: readonly LoadResult[]): string {
  const counted = results.map((result) => result.identityRows);
  const events = counted.reduce((sum, rows) => sum + rows.events, 0);
  const per = (table: (typeof IDENTITY_TABLES)[number]) =>
    (counted.reduce((sum, rows) => sum + rows.rows[table], 0) / events).toFixed(3);
  return IDENTITY_TABLES.map((table) => `${table} ${per(table)}`).join(", ");
}

export async function runWebCompare(work: string): Promise<void> {
  const bodies = { defaults: join(work, "web.jsonl"), http: join(work, "http.jsonl") };
  const bytes = { web: VARIANTS.defaults.write(bodies.defaults), http: VARIANTS.http.write(bodies.http) };
  console.log(
    `bench web-compare: web (~${fmt(bytes.web)} bytes an event) with the defaults and with ` +
      `PERSON_AUTO_PROPERTIES=0 GEOIP=0, and http (~${fmt(bytes.http)} bytes), A B C C B A, each seeded with its file first`,
  );
  const results: Record<Variant, LoadResult[]> = { defaults: [], off: [], http: [] };
  const order: readonly Variant[] = ["defaults", "off", "http", "http", "off", "defaults"];
  for (const [i, variant] of order.entries()) {
    const load = VARIANTS[variant];
    const file = variant === "http" ? bodies.http : bodies.defaults;
    const { first, measured } = await drivePasses(join(work, `${variant}-${i}`), load, file);
    console.log(`${load.label} (${i + 1} of ${order.length})`);
    printPasses(first, measured);
    results[variant].push(measured);
  }
  const rate = (variant: Variant) => average(results[variant].map((result) => result.rate));
  console.log(
    `web-compare (measured loads): web ${fmt(rate("defaults"))} events/s with the defaults, ${fmt(rate("off"))} ` +
      `without automatic person properties and GeoIP, http ${fmt(rate("http"))}; ` +
      `defaults/off ×${(rate("defaults") / rate("off")).toFixed(2)}, web/http ×${(rate("defaults") / rate("http")).toFixed(2)}`,
  );
  for (const variant of ["defaults", "off", "http"] as const) {
    console.log(`  identity rows per event, ${VARIANTS[variant].label}: ${rowsPerEvent(results[variant])}`);
  }
}
