import { afterAll, beforeAll, expect, spyOn, test } from "bun:test";
import { createSchema } from "../../src/storage/schema";
import { count } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";
let service: TestService;

beforeAll(async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY });
});
afterAll(() => service.stop());

test("a failed write is a 500; once the database is repaired, the client's retry succeeds without duplicates", async () => {
  const body = {
    api_key: KEY,
    batch: [
      {
        event: "will_fail",
        distinct_id: "user-500",
        uuid: "0190b4a1-0000-7000-8000-0000000005a0",
        timestamp: "2024-06-01T00:00:00Z",
      },
    ],
  };
  await service.db.command(`DROP TABLE ${service.db.table("sessions_mv")}`);
  await service.db.command(`DROP TABLE ${service.db.table("events")}`);
  const logged = spyOn(console, "error").mockImplementation(() => {});
  try {
    expect(await send(service, body)).toMatchObject({
      status: 500,
      body: { status: "error", error: "Internal server error" },
    });
    expect(logged).toHaveBeenCalled();
  } finally {
    logged.mockRestore();
  }

  await createSchema(service.db); // the operator repairs the database; the client retries
  expect(await send(service, body)).toMatchObject({ status: 200, body: { ingested: 1 } });
  expect(await send(service, body)).toMatchObject({ status: 200, body: { ingested: 1 } });
  expect(await count(service.db, "events", "event = 'will_fail'", { final: true })).toBe(1);
});
