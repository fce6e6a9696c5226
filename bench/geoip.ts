/**
 * `npm run bench geoip`: what locating every request's address costs. The `http` load, each request from a random
 * IPv4 address behind a trusted proxy (`X-Forwarded-For`), each load on a fresh data directory, in turns over
 * `BENCH_ROUNDS` rounds: without GeoIP, with it, and without it but with the location already in every event's
 * properties (the keys the bundled database finds, sent by the client), which is what the keys cost where PostHog
 * keeps them rather than in `events.geoip`. Target: GeoIP keeps at least 0.95 of the rate.
 * `PERSON_AUTO_PROPERTIES=0` leaves the person's location out of every load, to tell the two sides apart.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { average, drive, type LoadResult, printLoad, startService, stop } from "./harness";
import { PEOPLE, writeBodies } from "./workload";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);

/** What the bundled database adds for a US address. */
const LOCATED = {
  $geoip_country_code: "US",
  $geoip_country_name: "United States",
  $geoip_continent_code: "NA",
  $geoip_continent_name: "North America",
};

type Variant = "without" | "with" | "sent";

async function load(work: string, name: string, geoip: boolean, bodiesFile: string): Promise<LoadResult> {
  const service = await startService(join(work, name), { TRUSTED_PROXIES: "127.0.0.1", GEOIP: geoip ? "1" : "0" });
  try {
    return await drive(service, bodiesFile);
  } finally {
    await stop(service);
  }
}

export async function runGeoIp(work: string): Promise<void> {
  const plain = join(work, "bodies.jsonl");
  const sent = join(work, "bodies-located.jsonl");
  writeBodies(plain, 1000, { shape: "known", people: PEOPLE });
  const located = readFileSync(plain, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      const body = JSON.parse(line) as { batch: { properties: Record<string, unknown> }[] };
      for (const event of body.batch) Object.assign(event.properties, LOCATED);
      return JSON.stringify(body);
    });
  writeFileSync(sent, `${located.join("\n")}\n`);
  process.env.BENCH_FORWARDED_FOR = "1";
  const runs: Record<Variant, () => [boolean, string]> = {
    without: () => [false, plain],
    with: () => [true, plain],
    sent: () => [false, sent],
  };
  const rates: Record<Variant, number[]> = { without: [], with: [], sent: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, variant] of (["without", "with", "sent", "sent", "with", "without"] as const).entries()) {
      const [geoip, bodies] = runs[variant]();
      const result = await load(work, `${variant}-${round}-${i}`, geoip, bodies);
      printLoad(variant === "sent" ? "location sent" : `${variant} GeoIP`, result);
      rates[variant].push(result.rate);
    }
  }
  const base = average(rates.without);
  console.log(
    `geoip: with GeoIP ×${(average(rates.with) / base).toFixed(3)} of the rate without (target ≥ 0.95); ` +
      `the same keys sent by the client, no GeoIP: ×${(average(rates.sent) / base).toFixed(3)}`,
  );
}
