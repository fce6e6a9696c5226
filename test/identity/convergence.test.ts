import { afterAll, beforeAll, expect, test } from "bun:test";
import { loadConfig } from "../../src/config";
import { ClickHouse } from "../../src/storage/clickhouse";
import { IdentityModel, linkedIdOf, type ModelEvent, random, randomEvent, timestamps } from "../helpers/identity-model";
import { processEnv, type RunningService, startProcess } from "../helpers/process";
import { count, events, links, persons } from "../helpers/rows";

/**
 * Three service processes over one engine, each one of several writers, and the engine's own service, whose
 * writable query port they write through, taking traffic beside them: clients send random identity traffic
 * over shared IDs to all of them at once, the same persons are merged on different instances at the same moment,
 * and each instance in turn is killed with SIGKILL while it has requests in flight (so, often, between the
 * inserts of a flush), then started again. At rest, after
 * every client's retries, the stored state is what the rules give (docs/scale-out.md#why-it-converges).
 */

const KEY = "key-1";
const PASSWORD = "convergence";
const SEED = Number(process.env.IDENTITY_SEED ?? 20261124);
const CLIENTS = 6;
const BATCHES_PER_CLIENT = 20;

let engine: RunningService | undefined;
let instanceEnv: Record<string, string>;
let db: ClickHouse;

beforeAll(async () => {
  const base = processEnv();
  if (process.env.CLICKHOUSE_URL) {
    instanceEnv = base; // the server the suite runs against
  } else {
    // the engine: a service whose writable query port the instances use as their ClickHouse server
    engine = await startProcess(
      processEnv({
        CLICKHOUSE_DATABASE: base.CLICKHOUSE_DATABASE!,
        QUERY_PORT: "0",
        QUERY_PASSWORD: PASSWORD,
        QUERY_READONLY: "0",
        QUERY_CONCURRENCY: "64",
        PUBLIC_API_KEYS: KEY,
        LINK_CACHE_TTL_MS: "200",
      }),
    );
    const { DATA_DIR: _, ...rest } = base;
    instanceEnv = { ...rest, CLICKHOUSE_URL: engine.started.query!, CLICKHOUSE_PASSWORD: PASSWORD };
  }
  Object.assign(instanceEnv, { PUBLIC_API_KEYS: KEY, LINK_CACHE_TTL_MS: "200" });
  db = await ClickHouse.connect(loadConfig(instanceEnv).clickhouse);
});

afterAll(async () => {
  // embedded, the engine's data directory is a scratch one (and its port keeps the service's own database)
  if (process.env.CLICKHOUSE_URL) await db?.command(`DROP DATABASE IF EXISTS \`${db.database}\``);
  await db?.close();
  engine?.child.kill("SIGTERM");
  await engine?.child.exited;
});

/** Posts a batch to the instance `pick` gives, and again to another one until one answers 200. */
async function sendUntilAcknowledged(pick: () => RunningService, batch: readonly ModelEvent[]): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const instance = pick();
    const answer = await fetch(`${instance.url}/batch/`, {
      method: "POST",
      body: JSON.stringify({ api_key: KEY, batch }),
      headers: { "content-type": "application/json" },
    }).catch(() => undefined);
    if (answer?.status === 200) return attempt;
    if (answer !== undefined && answer.status < 500)
      throw new Error(`refused: ${answer.status} ${await answer.text()}`);
    await Bun.sleep(20);
  }
}

test(`three instances, simultaneous merges and a SIGKILL mid-flush converge to what the rules give (seed ${SEED})`, async () => {
  const rng = random(SEED);
  const timestamp = timestamps(rng, 40);
  const ids = Array.from({ length: 40 }, (_, i) => (i < 28 ? `anon-${i}` : `user-${i}`));
  const sessions = Array.from({ length: 8 }, (_, i) => `session-${i}`);
  const instances: RunningService[] = [];
  for (let i = 0; i < 3; i++) instances.push(await startProcess({ ...instanceEnv }));
  // the embedded engine's own service takes traffic too: it writes beside the others through its writable port
  const writers = () => (engine === undefined ? instances : [...instances, engine]);
  const sent: ModelEvent[] = [];
  let retries = 0;
  let killing = true; // clients keep sending until every kill has happened, so each kill meets traffic
  const batchOf = (length: number) =>
    Array.from({ length }, () => {
      const event = randomEvent(rng, ids, timestamp);
      event.properties.$session_id = rng.pick(sessions);
      return event;
    });
  try {
    const client = async (c: number) => {
      for (let b = 0; b < BATCHES_PER_CLIENT || killing; b++) {
        const batch = batchOf(1 + rng.int(15));
        retries += (await sendUntilAcknowledged(() => writers()[(c + b + rng.int(2)) % writers().length]!, batch)) - 1;
        sent.push(...batch);
      }
    };
    /** The same persons merged on all three instances at once, in a ring, while the clients run. */
    const simultaneousMerges = async () => {
      for (let round = 0; round < 5; round++) {
        await Bun.sleep(150);
        const [a, b, c] = [rng.pick(ids), rng.pick(ids), rng.pick(ids)];
        const merges = [
          [a, b],
          [b, c],
          [c, a],
        ].map(([user, anon]) => [
          {
            event: "$identify",
            distinct_id: user!,
            uuid: Bun.randomUUIDv7(),
            timestamp: timestamp(),
            properties: { $anon_distinct_id: anon, $set: { merged: round }, $session_id: sessions[0] },
          } satisfies ModelEvent,
        ]);
        await Promise.all(
          merges.map((batch, i) => sendUntilAcknowledged(() => writers()[(i + 1) % writers().length]!, batch)),
        );
        for (const batch of merges) sent.push(...batch);
      }
    };
    /**
     * An instance killed while requests are in flight, and started again on the same database; three times. Each
     * kill lands on a request of its own to the victim, sent just before: whatever the clients happen to be
     * waiting on (on a busy machine they can all be waiting on the other instances), one flush dies mid-way.
     */
    const killAndRestart = async () => {
      const midFlush: Promise<void>[] = [];
      for (let kill = 0; kill < 3; kill++) {
        await Bun.sleep(200 + rng.int(400));
        const victim = instances[kill]!;
        const batch = batchOf(1 + rng.int(15));
        let first = true;
        const victimFirst = () => {
          if (!first) return writers()[rng.int(writers().length)]!;
          first = false;
          return victim;
        };
        midFlush.push(
          sendUntilAcknowledged(victimFirst, batch).then((attempts) => {
            retries += attempts - 1;
            sent.push(...batch);
          }),
        );
        await Bun.sleep(2); // the request is on its way: the flush it joins waits at least FLUSH_LINGER_MS (10 ms)
        victim.child.kill("SIGKILL");
        await victim.child.exited;
        await Bun.sleep(100);
        instances[kill] = await startProcess({ ...instanceEnv });
      }
      await Promise.all(midFlush);
      killing = false;
    };
    await Promise.all([
      ...Array.from({ length: CLIENTS }, (_, c) => client(c)),
      simultaneousMerges(),
      killAndRestart(),
    ]);
  } finally {
    for (const instance of instances) instance.child.kill("SIGTERM");
    await Promise.all(instances.map((instance) => instance.child.exited));
  }
  console.log(`convergence: ${sent.length} events acknowledged, ${retries} retries`);
  expect(retries).toBeGreaterThan(0); // the kill cost some requests their first answer

  const model = new IdentityModel();
  for (const event of sent) model.apply(event);
  const [storedLinks, storedPersons] = await Promise.all([links(db), persons(db)]);

  // IDs joined by any $identify / $create_alias share one person; IDs never joined do not
  const named = new Set(sent.flatMap((event) => [event.distinct_id, linkedIdOf(event) ?? event.distinct_id]));
  expect([...storedLinks.keys()].sort()).toEqual([...named].sort());
  const personOf = (id: string) => storedLinks.get(id)!.person_id;
  for (const id of named) {
    for (const other of named) {
      expect({ id, other, together: personOf(id) === personOf(other) }).toEqual({
        id,
        other,
        together: model.component(id).has(other),
      });
    }
  }
  // every live link points at a live person, whose properties, primary ID and identification follow the rules
  for (const id of named) {
    const person = storedPersons.get(personOf(id));
    const primary = model.identifiedPrimary(id);
    expect({ ...person, of: id }).toMatchObject({
      of: id,
      is_deleted: 0,
      properties: model.properties(id),
      is_identified: primary === undefined ? 0 : 1,
    });
    if (primary !== undefined) expect(person!.distinct_id).toBe(primary);
    else expect(model.component(id).has(person!.distinct_id)).toBe(true);
  }
  // every acknowledged event stored once, with no event that was not acknowledged
  const stored = await events(db, { final: true });
  expect(stored.map((event) => event.uuid).sort()).toEqual(sent.map((event) => event.uuid).sort());
  // every event, read through person_overrides, is on the person its distinct ID has now (some were stored on a
  // person merged away since)
  const resolved = await db.rows<{ uuid: string; distinct_id: string; person_id: string }>(
    `SELECT toString(uuid) AS uuid, distinct_id, toString(person_id) AS person_id FROM ${db.table("events_resolved")}`,
  );
  expect(resolved.length).toBe(sent.length);
  const storedPerson = new Map(stored.map((event) => [event.uuid, event.person_id]));
  expect(resolved.filter((event) => storedPerson.get(event.uuid) !== event.person_id).length).toBeGreaterThan(0);
  for (const event of resolved) {
    expect({ id: event.distinct_id, person: event.person_id }).toEqual({
      id: event.distinct_id,
      person: storedLinks.get(event.distinct_id)!.person_id,
    });
  }
  // sessions exact: each counts its acknowledged events once, whatever was written twice before a kill
  const counted = await db.rows<{ session_id: string; events: string | number }>(
    `SELECT session_id, uniqMerge(event_count) AS events FROM ${db.table("sessions")} GROUP BY session_id`,
  );
  const expected = Map.groupBy(sent, (event) => event.properties.$session_id as string);
  expect(Object.fromEntries(counted.map((row) => [row.session_id, Number(row.events)]))).toEqual(
    Object.fromEntries([...expected].map(([session, list]) => [session, list.length])),
  );
  expect(await count(db, "identity_facts")).toBeGreaterThan(0);
}, 120_000);
