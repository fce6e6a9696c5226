import { describe, expect, test } from "bun:test";
import { linkCache } from "../../../src/storage/identity/cache";

const link = (version: number) => ({ personId: "p", version });

/** A clock the test moves by hand; it starts above 0, since lru-cache never expires an entry set at time 0. */
function manualClock() {
  let now = 1_000;
  return { now: () => now, to: (at: number) => (now = 1_000 + at) };
}

describe("linkCache", () => {
  test("entries are served up to ttl after they were set and never later, however often they are read", () => {
    const clock = manualClock();
    const cache = linkCache(10, 100, clock);
    cache.set("a", link(1));
    clock.to(50);
    expect(cache.get("a")).toEqual(link(1));
    clock.to(100);
    expect(cache.get("a")).toEqual(link(1));
    clock.to(100.001);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  test("setting an entry again renews it", () => {
    const clock = manualClock();
    const cache = linkCache(10, 100, clock);
    cache.set("a", link(1));
    clock.to(50);
    cache.set("a", link(2));
    clock.to(149);
    expect(cache.get("a")).toEqual(link(2));
    clock.to(151);
    expect(cache.get("a")).toBeUndefined();
  });

  test("past capacity, the least recently used entry goes first", () => {
    const cache = linkCache(2, 1_000, manualClock());
    cache.set("a", link(1));
    cache.set("b", link(2));
    expect(cache.get("a")).toEqual(link(1));
    cache.set("c", link(3));
    expect(cache.size).toBe(2);
    expect([cache.get("a"), cache.get("b"), cache.get("c")]).toEqual([link(1), undefined, link(3)]);
  });

  test("holds its capacity through many more distinct IDs than it keeps", () => {
    const cache = linkCache(1_000, 60_000, manualClock());
    for (let i = 0; i < 50_000; i++) cache.set(`id-${i}`, link(i));
    expect(cache.size).toBe(1_000);
    expect(cache.get("id-49999")).toEqual(link(49_999));
    expect(cache.get("id-48999")).toBeUndefined();
  });

  test("delete forgets", () => {
    const cache = linkCache(10, 100, manualClock());
    cache.set("a", link(1));
    cache.delete("a");
    expect(cache.get("a")).toBeUndefined();
  });
});
