/**
 * `npm run bench persons`: the `http` load over 10,000 and over 1,000,000 known persons (seeded through the
 * service first), each cold (just restarted) and warm (right after), the populations taking turns.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  average,
  BASELINE_ROWS_PER_INSERT,
  bestEngine,
  drive,
  fmt,
  printEngine,
  printLoad,
  settleMerges,
  startService,
  stop,
} from "./harness";
import { EVENTS_PER_BATCH, PEOPLE, seed, writeBodies } from "./workload";

const LARGE_POPULATION = Number(process.env.BENCH_PEOPLE ?? 1_000_000);
/** Rounds of `persons`: each runs both populations, cold and warm; the order alternates. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
type Temperature = "cold" | "warm";
/**
 * BENCH_DATA=<dir>: `persons` keeps its seeded data directories there, and a later run finds them and skips the
 * seeding (each run's loads add their events to them).
 */
const KEPT_DATA = process.env.BENCH_DATA;
/** Below this, a tenth of the seeding is a handful of request rounds, too few to time: only the overall rate is printed. */
const TIMED_TENTH = 16 * EVENTS_PER_BATCH * 10;

/** Seeds `people` new visitors through a service of their own on `dataDir`, waits for its merges, and prints the rate. */
async function seedPopulation(dataDir: string, people: number): Promise<string[]> {
  const seeding = await startService(dataDir);
  const { ids, rate, tenths } = await seed(seeding.url, people);
  const settled = await settleMerges(seeding);
  await stop(seeding);
  const byTenth =
    people / 10 < TIMED_TENTH
      ? ""
      : `; by tenth: ${tenths.map(fmt).join(", ")} (last/first ×${(tenths.at(-1)! / tenths[0]!).toFixed(2)})`;
  console.log(`persons: ${fmt(people)} persons seeded through the service, ${fmt(rate)} new IDs/s${byTenth}`);
  console.log(`  merges after seeding settled in ${settled}`);
  return ids;
}

/**
 * persons: the same load over a small and a large known population, each cold (just restarted) and warm. The
 * machine's speed drifts between runs, so the populations take turns, `ROUNDS` times, in the order small, large,
 * then large, small, and each round's ratio compares runs minutes apart.
 */
export async function runPersons(work: string): Promise<void> {
  const populations = [PEOPLE, LARGE_POPULATION];
  const root = KEPT_DATA ?? work;
  mkdirSync(root, { recursive: true });
  const bodiesFileFor = (people: number) => join(work, `bodies-${people}.jsonl`);
  const dataDirFor = (people: number) => join(root, `service-${people}`);
  for (const people of populations) {
    const idsFile = join(root, `ids-${people}.json`);
    let ids: string[];
    if (existsSync(idsFile)) {
      ids = JSON.parse(readFileSync(idsFile, "utf8")) as string[];
      console.log(`persons: ${fmt(people)} persons seeded by an earlier run, in ${dataDirFor(people)}`);
    } else {
      ids = await seedPopulation(dataDirFor(people), people);
      writeFileSync(idsFile, JSON.stringify(ids));
    }
    writeBodies(bodiesFileFor(people), 3000, { shape: "known", people, ids });
  }
  const rounds: Map<number, Record<Temperature, number>>[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    console.log(`round ${round} of ${ROUNDS}`);
    const rates = new Map<number, Record<Temperature, number>>();
    // ABBA: every other round runs the large population first, so a machine slowing (or speeding) over a round
    // does not always favour the same population.
    for (const people of round % 2 === 1 ? populations : populations.toReversed()) {
      const service = await startService(dataDirFor(people));
      const cold = await drive(service, bodiesFileFor(people));
      printLoad(`${fmt(people)} cold`, cold);
      const warm = await drive(service, bodiesFileFor(people));
      printLoad(`${fmt(people)} warm`, warm);
      await stop(service);
      rates.set(people, { cold: cold.rate, warm: warm.rate });
    }
    rounds.push(rates);
  }
  const engine = bestEngine(bodiesFileFor(PEOPLE), join(work, "baseline"), BASELINE_ROWS_PER_INSERT);
  printEngine("engine baseline", engine, BASELINE_ROWS_PER_INSERT);
  for (const temperature of ["cold", "warm"] as const) {
    const ratios = rounds.map((rates) => rates.get(LARGE_POPULATION)![temperature] / rates.get(PEOPLE)![temperature]);
    const toEngine = (people: number) =>
      rounds.map((rates) => (rates.get(people)![temperature] / engine.rate).toFixed(2)).join("/");
    console.log(
      `  ${temperature}: ${fmt(LARGE_POPULATION)} vs ${fmt(PEOPLE)} known persons, by round: ` +
        `${ratios.map((ratio) => `×${ratio.toFixed(2)}`).join(", ")} ` +
        `(mean ×${average(ratios).toFixed(2)}; ` +
        `ratio to the engine ${toEngine(PEOPLE)} → ${toEngine(LARGE_POPULATION)})`,
    );
  }
}
