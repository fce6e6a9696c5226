import { expect, test } from "bun:test";
import {
  expectNoSplitPersons,
  expectOneRowPerVersion,
  expectStoredToMatch,
  IdentityModel,
  type ModelEvent,
  random,
  randomEvent,
  timestamps,
} from "../helpers/identity-model";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";
const SEED = Number(process.env.IDENTITY_SEED ?? 20261122);
const GROUPS = 4;
const IDS_PER_GROUP = 8;
const ROUNDS = 40;

// Both ways a process can resolve: as its database's only writer (embedded), and beside other writers (a server).
test.each([true, false])(
  `identity matches the reference model: concurrent batches, personless events and a restart midway (seed ${SEED}, sole writer: %p)`,
  async (soleWriter) => {
    const options = { identity: { soleWriter, personCacheBytes: Number(process.env.PCB ?? 64e6) } };
    const rng = random(SEED);
    const model = new IdentityModel({ holdsPersons: soleWriter });
    // timestamps up to 60 events out of the order they are sent in: the rules go by timestamp, not arrival
    const timestamp = timestamps(rng, 60);
    // IDs are split into groups that never link to each other, so batches of different groups may be sent
    // concurrently and applied in any order without changing the outcome.
    const groups = Array.from({ length: GROUPS }, (_, g) =>
      Array.from({ length: IDS_PER_GROUP }, (_, i) => (i < 5 ? `anon-${g}-${i}` : `user-${g}-${i}`)),
    );

    let service: TestService = await startService({ PUBLIC_API_KEYS: KEY }, options);
    const database = service.config.clickhouse.database;
    let sent = 0;
    try {
      for (let round = 0; round < ROUNDS; round++) {
        if (round === ROUNDS / 2) {
          await service.stop({ drop: false }); // a restart: the new process has an empty cache
          service = await startService({ PUBLIC_API_KEYS: KEY, CLICKHOUSE_DATABASE: database }, options);
        }
        const batches: ModelEvent[][] = groups.map((ids) =>
          Array.from({ length: 1 + rng.int(30) }, () => randomEvent(rng, ids, timestamp, { personless: 0.2 })),
        );
        const answers = await Promise.all(batches.map((batch) => send(service, { api_key: KEY, batch })));
        for (const [i, answer] of answers.entries())
          expect(answer).toMatchObject({ status: 200, body: { ingested: batches[i]!.length } });
        for (const batch of batches) model.applyBatch(batch);
        sent += batches.reduce((n, batch) => n + batch.length, 0);
      }
      expect(sent).toBeGreaterThan(1_500);
      await expectStoredToMatch(service.db, model);
      await expectNoSplitPersons(service.db);
      await expectOneRowPerVersion(service.db);
    } finally {
      await service.stop();
    }
  },
  60_000,
);

// `$set_once` and `$unset` of two keys through merges of few IDs, far out of order: where a sole writer decides
// which `$set_once`s to record from the person it holds (seeds that found a fault in review among them).
test.each([7, 27, 37, 47, 51])(
  "$set_once and $unset through merges, far out of order, sole writer (seed %d)",
  async (seed) => {
    const rng = random(seed);
    const model = new IdentityModel({ holdsPersons: true });
    const timestamp = timestamps(rng, 40);
    const ids = ["a", "a2", "u", "u2", "w"];
    const service = await startService({ PUBLIC_API_KEYS: KEY }, { identity: { soleWriter: true } });
    try {
      for (let round = 0; round < 30; round++) {
        const batch: ModelEvent[] = Array.from({ length: 1 + rng.int(6) }, () => {
          const properties: Record<string, unknown> = {};
          const key = rng.pick(["plan", "tier"]);
          const roll = rng.next();
          let event = "e";
          if (roll < 0.5) properties.$set_once = { [key]: `v${rng.int(100)}` };
          else if (roll < 0.75) properties.$unset = [key];
          else if (roll < 0.8) properties.$set = { [key]: `s${rng.int(100)}` };
          else {
            event = rng.next() < 0.5 ? "$identify" : "$create_alias";
            properties[event === "$identify" ? "$anon_distinct_id" : "alias"] = rng.pick(ids);
            if (rng.next() < 0.5) properties.$set_once = { [key]: `v${rng.int(100)}` };
          }
          return { event, distinct_id: rng.pick(ids), uuid: Bun.randomUUIDv7(), timestamp: timestamp(), properties };
        });
        expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
        model.applyBatch(batch);
      }
      await expectStoredToMatch(service.db, model);
      await expectOneRowPerVersion(service.db);
    } finally {
      await service.stop();
    }
  },
);
