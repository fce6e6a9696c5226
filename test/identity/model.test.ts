import { expect, test } from "bun:test";
import {
  expectNoSplitPersons,
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
    } finally {
      await service.stop();
    }
  },
  60_000,
);
