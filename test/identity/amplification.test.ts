import { expect, test } from "bun:test";
import { count } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";
const ABSORBED = 2_000;

/** Rows of each identity table, as written (not collapsed). */
async function rows(service: TestService): Promise<Record<string, number>> {
  const tables = ["persons", "person_distinct_ids", "person_overrides"] as const;
  return Object.fromEntries(await Promise.all(tables.map(async (table) => [table, await count(service.db, table)])));
}

/** One of several writers (nothing cached as exactly what is stored), with a person that absorbed `ABSORBED` others. */
async function absorbingService(): Promise<TestService> {
  const service = await startService({ PUBLIC_API_KEYS: KEY }, { identity: { soleWriter: false } });
  await sendOk(service, [
    { event: "$pageview", distinct_id: "main", timestamp: "2024-01-01T00:00:00Z" },
    ...Array.from({ length: ABSORBED }, (_, i) => ({
      event: "$pageview",
      distinct_id: `absorbed-${i}`,
      timestamp: "2024-02-01T00:00:00Z",
    })),
  ]);
  await sendOk(
    service,
    Array.from({ length: ABSORBED }, (_, i) => identify(`absorbed-${i}`)),
  );
  return service;
}

const identify = (id: string) => ({ event: "$identify", distinct_id: "main", properties: { $anon_distinct_id: id } });

/** Rows each identity table gained between two counts. */
function written(before: Record<string, number>, after: Record<string, number>) {
  return {
    persons: after.persons! - before.persons!,
    links: after.person_distinct_ids! - before.person_distinct_ids!,
    overrides: after.person_overrides! - before.person_overrides!,
  };
}

async function sendOk(service: TestService, batch: object[]): Promise<void> {
  expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
}

test(`with other writers, a $set on a person that absorbed ${ABSORBED} others writes one row`, async () => {
  const service = await absorbingService();
  try {
    const merged = await rows(service);
    expect(merged.person_overrides).toBe(ABSORBED + 1); // each person merged away, and the survivor back to itself

    await sendOk(service, [{ event: "$set", distinct_id: "main", properties: { $set: { plan: "pro" } } }]);
    const after = await rows(service);
    expect(written(merged, after)).toEqual({ persons: 1, links: 0, overrides: 0 });

    // an event on an absorbed ID changes nothing either
    await sendOk(service, [{ event: "$set", distinct_id: "absorbed-7", properties: { $set: { seats: 3 } } }]);
    expect((await rows(service)).persons! - after.persons!).toBe(1);
  } finally {
    await service.stop();
  }
}, 60_000);

test(`with other writers, a repeated $identify between two IDs of a person that absorbed ${ABSORBED} others writes one row`, async () => {
  const service = await absorbingService();
  try {
    const merged = await rows(service);
    await sendOk(service, [identify("absorbed-42")]);
    const after = await rows(service);
    expect(written(merged, after)).toEqual({ persons: 1, links: 0, overrides: 0 });
  } finally {
    await service.stop();
  }
}, 60_000);
