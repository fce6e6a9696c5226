/**
 * `npm run bench geoip`: what locating every request's address costs. The `http` load, each request from a random
 * IPv4 address behind a trusted proxy (`X-Forwarded-For`), on a service without and with GeoIP, A B B A over
 * `BENCH_ROUNDS` rounds, each load on a fresh data directory. Target: GeoIP keeps at least 0.95 of the rate.
 */
import { join } from "node:path";
import { drive, type LoadResult, printLoad, startService, stop } from "./harness";
import { PEOPLE, writeBodies } from "./workload";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);

async function load(work: string, name: string, geoip: boolean, bodiesFile: string): Promise<LoadResult> {
  const service = await startService(join(work, name), { TRUSTED_PROXIES: "127.0.0.1", GEOIP: geoip ? "1" : "0" });
  try {
    return await drive(service, bodiesFile);
  } finally {
    await stop(service);
  }
}

export async function runGeoIp(work: string): Promise<void> {
  const bodiesFile = join(work, "bodies.jsonl");
  writeBodies(bodiesFile, 1000, { shape: "known", people: PEOPLE });
  process.env.BENCH_FORWARDED_FOR = "1";
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const without1 = await load(work, `off-${round}-a`, false, bodiesFile);
    const with1 = await load(work, `on-${round}-a`, true, bodiesFile);
    const with2 = await load(work, `on-${round}-b`, true, bodiesFile);
    const without2 = await load(work, `off-${round}-b`, false, bodiesFile);
    for (const [label, result] of [
      ["without GeoIP", without1],
      ["with GeoIP", with1],
      ["with GeoIP", with2],
      ["without GeoIP", without2],
    ] as const) {
      printLoad(label, result);
    }
    const ratio = (with1.rate + with2.rate) / (without1.rate + without2.rate);
    ratios.push(ratio);
    console.log(`round ${round + 1}: with GeoIP ×${ratio.toFixed(3)} of the rate without (target ≥ 0.95)`);
  }
  console.log(
    `geoip: ${ratios.map((r) => `×${r.toFixed(3)}`).join(", ")}; mean ×${(ratios.reduce((a, b) => a + b) / ratios.length).toFixed(3)}`,
  );
}
