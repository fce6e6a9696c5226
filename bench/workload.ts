/**
 * The load the bench sends: posthog-node-shaped events (~470 bytes) from a population of people, in batches of
 * 100, written once to a file of request bodies that wrk replays; and the seeding of a population of persons.
 */
import { writeFileSync } from "node:fs";
import { random } from "../test/helpers/identity-model"; // the seeded PRNG: every run sends the same batches

export const EVENTS_PER_BATCH = 100;
export const KEY = "bench-key";
/** People the `http` and `mix` loads draw from, and the small population of `persons`. */
export const PEOPLE = 10_000;

export type Shape = "known" | "mix" | "new";

export interface Population {
  readonly shape: Shape;
  readonly people: number;
  /** The known people's distinct IDs, when they were seeded; else `user-0` … */
  readonly ids?: readonly string[];
  /** Events marked `$process_person_profile: false`, as posthog-js sends an anonymous visitor's by default. */
  readonly personless?: boolean;
}

/** A new visitor's distinct ID as posthog-js makes it: a UUIDv7, so new IDs sort after the ones already stored. */
export const visitorId = (): string => Bun.randomUUIDv7();

/** One event as posthog-node sends it (~470 bytes). */
export function event(
  rng: ReturnType<typeof random>,
  at: number,
  { shape, people, ids, personless = false }: Population,
): Record<string, unknown> {
  const person = rng.int(people);
  const distinctId = shape === "new" ? visitorId() : (ids?.[person] ?? `user-${person}`);
  const properties: Record<string, unknown> = {
    $session_id: `session-${person}-${Math.floor(at / 1800_000)}`,
    $window_id: `window-${person % 97}`,
    $current_url: `https://app.example.com/projects/${person % 50}/insights?tab=${rng.int(5)}`,
    $host: "app.example.com",
    $lib: "posthog-node",
    $lib_version: "5.70.0",
    plan: ["free", "pro", "enterprise"][person % 3],
    seats: person % 40,
    experiment: rng.next() < 0.5 ? "control" : "test",
    ...(personless && { $process_person_profile: false }),
  };
  let name = rng.next() < 0.6 ? "$pageview" : "clicked";
  const identityShare = shape === "mix" ? 0.2 : 0.02;
  if (shape !== "new" && rng.next() < identityShare) {
    const kind = shape === "mix" ? rng.int(3) : 0;
    if (kind === 0) {
      name = "$identify";
      properties.$anon_distinct_id = `anon-${person}-${rng.int(3)}`;
      properties.$set = { email: `user${person}@example.com`, plan: properties.plan };
      properties.$set_once = { first_seen: new Date(at).toISOString() };
    } else if (kind === 1) {
      name = "$create_alias";
      properties.alias = `alias-${person}-${rng.int(3)}`;
    } else {
      properties.$set = { last_plan_change: new Date(at).toISOString(), seats: properties.seats };
    }
  }
  return {
    uuid: Bun.randomUUIDv7(),
    event: name,
    distinct_id: distinctId,
    timestamp: new Date(at).toISOString(),
    properties,
    type: "capture",
    library: "posthog-node",
    library_version: "5.70.0",
  };
}

export const START = Date.UTC(2026, 10, 1);

export const JSON_POST = { method: "POST", headers: { "Content-Type": "application/json" } } as const;

export function body(batch: readonly object[]): string {
  return JSON.stringify({ api_key: KEY, batch, sent_at: new Date(START).toISOString() });
}

/** Writes `count` request bodies, one a line; returns the mean bytes per event. */
export function writeBodies(path: string, count: number, population: Population): number {
  const rng = random(20261122);
  const lines: string[] = [];
  for (let b = 0; b < count; b++) {
    const at = (i: number) => START + (b * EVENTS_PER_BATCH + i) * 100;
    lines.push(body(Array.from({ length: EVENTS_PER_BATCH }, (_, i) => event(rng, at(i), population))));
  }
  writeFileSync(path, `${lines.join("\n")}\n`);
  return lines.reduce((sum, line) => sum + line.length, 0) / (count * EVENTS_PER_BATCH);
}

/**
 * Makes `people` persons known: one `$pageview` from each of `people` new visitors through the service, 16
 * requests at a time: new-visitor traffic while the persons table grows from empty. Returns their distinct IDs,
 * the new IDs/s overall and for each tenth.
 */
export async function seed(url: string, people: number): Promise<{ ids: string[]; rate: number; tenths: number[] }> {
  const ids = Array.from({ length: people }, visitorId);
  const tenths: number[] = [];
  const started = performance.now();
  let mark = { at: started, done: 0 };
  let done = 0;
  let next = 0;
  const worker = async () => {
    for (let first = next; first < people; first = next) {
      next += EVENTS_PER_BATCH;
      const batch = Array.from({ length: Math.min(EVENTS_PER_BATCH, people - first) }, (_, i) => ({
        uuid: Bun.randomUUIDv7(),
        event: "$pageview",
        distinct_id: ids[first + i],
        timestamp: new Date(START).toISOString(),
        properties: { $current_url: "https://app.example.com/", $lib: "posthog-node" },
      }));
      for (;;) {
        const response = await fetch(`${url}/batch/`, { ...JSON_POST, body: body(batch) });
        await response.arrayBuffer();
        if (response.ok) break;
        if (response.status !== 503) throw new Error(`seeding: ${response.status}`);
        await Bun.sleep(1000);
      }
      done += batch.length;
      if (done >= ((tenths.length + 1) * people) / 10) {
        const now = { at: performance.now(), done };
        tenths.push((now.done - mark.done) / ((now.at - mark.at) / 1000));
        mark = now;
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return { ids, rate: people / ((performance.now() - started) / 1000), tenths };
}
