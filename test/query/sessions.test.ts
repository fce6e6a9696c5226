import { describe, expect, test } from "bun:test";
import { QueryError } from "../../src/query/errors";
import { MAX_WAITING, Places } from "../../src/query/sessions";

// The line of queries waiting for one of QUERY_CONCURRENCY places: bounded, so that a flood of queries is refused
// at once rather than piling up for the whole wait. (The places themselves, through the port: engine.test.ts.)

describe("the places' waiting line", () => {
  test("at most MAX_WAITING queries wait; one more is refused at once, and a freed place goes to the first in line", async () => {
    const places = new Places(1, 60_000); // a wait far beyond the test's own timeout: nobody here waits it out
    const first = await places.take();
    const order: number[] = [];
    const waiting = Array.from({ length: MAX_WAITING }, (_, n) =>
      places.take().then((free) => {
        order.push(n);
        return free;
      }),
    );
    const refused = await places.take().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(QueryError);
    expect((refused as QueryError).text).toBe(
      "Code: 202. DB::Exception: Too many simultaneous queries. Maximum: 1. (TOO_MANY_SIMULTANEOUS_QUERIES)",
    );
    expect(order).toEqual([]); // still waiting, every one of them
    // each freed place goes to the next in line, and the last one freed is free again
    first();
    for (const next of waiting) (await next)();
    expect(order).toEqual(Array.from({ length: MAX_WAITING }, (_, n) => n));
    expect(places.taken).toBe(0);
  });
});
