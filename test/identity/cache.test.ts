import { describe, expect, test } from "bun:test";
import type { Timestamp } from "../../src/contract/event";
import { personIdFor } from "../../src/identity";
import { cachePerson, linkCache, personCache } from "../../src/identity/cache";
import type { Component } from "../../src/identity/component";
import { components } from "../../src/identity/components";
import { identityFact, propertyFact } from "../../src/identity/facts";

const link = (version: number) => ({ personId: "p", version });

/** A clock the test moves by hand; it starts above 0, since lru-cache never expires an entry set at time 0. */
function manualClock() {
  let now = 1_000;
  return { now: () => now, to: (at: number) => (now = 1_000 + at) };
}

describe("linkCache", () => {
  test("entries are served up to ttl after they were set and never later, however often they are read", () => {
    const clock = manualClock();
    const cache = linkCache(10, 100, { clock });
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
    const cache = linkCache(10, 100, { clock });
    cache.set("a", link(1));
    clock.to(50);
    cache.set("a", link(2));
    clock.to(149);
    expect(cache.get("a")).toEqual(link(2));
    clock.to(151);
    expect(cache.get("a")).toBeUndefined();
  });

  test("past capacity, the least recently used entry goes first", () => {
    const cache = linkCache(2, 1_000, { clock: manualClock() });
    cache.set("a", link(1));
    cache.set("b", link(2));
    expect(cache.get("a")).toEqual(link(1));
    cache.set("c", link(3));
    expect(cache.size).toBe(2);
    expect([cache.get("a"), cache.get("b"), cache.get("c")]).toEqual([link(1), undefined, link(3)]);
  });

  test("holds its capacity through many more distinct IDs than it keeps", () => {
    const cache = linkCache(1_000, 60_000, { clock: manualClock() });
    for (let i = 0; i < 50_000; i++) cache.set(`id-${i}`, link(i));
    expect(cache.size).toBe(1_000);
    expect(cache.get("id-49999")).toEqual(link(49_999));
    expect(cache.get("id-48999")).toBeUndefined();
  });

  test("delete forgets", () => {
    const cache = linkCache(10, 100, { clock: manualClock() });
    cache.set("a", link(1));
    cache.delete("a");
    expect(cache.get("a")).toBeUndefined();
  });
});

describe("linkCache without a ttl (a sole writer's)", () => {
  test("never expires an entry; only capacity evicts", () => {
    const clock = manualClock();
    const cache = linkCache(2, 0, { clock });
    cache.set("a", link(1));
    clock.to(365 * 24 * 3600 * 1000);
    expect(cache.get("a")).toEqual(link(1));
    cache.set("b", link(2));
    cache.set("c", link(3));
    expect([cache.get("a"), cache.get("b"), cache.get("c")]).toEqual([undefined, link(2), link(3)]);
  });
});

describe("personCache", () => {
  /** A person's facts, folded: one birth, and a property of `size` characters. */
  const person = (id: string, size = 0): Component => {
    const at = ["2024-01-01 00:00:00.000000" as Timestamp, 1] as const;
    const [component] = components([
      identityFact("born", id, personIdFor(id), at),
      ...(size > 0 ? [propertyFact(id, "note", at, [0, JSON.stringify("x".repeat(size))], undefined)] : []),
    ]);
    return component!;
  };

  test("a person's size grows with its properties", () => {
    expect(person("p", 1_000).bytes).toBeGreaterThan(person("p").bytes + 2_000);
  });

  test("stays within its byte budget, the least recently used going first", () => {
    const one = person("p-100").bytes;
    const cache = personCache(10 * one);
    for (let i = 100; i < 1_000; i++) cachePerson(cache, person(`p-${i}`));
    expect(cache.calculatedSize).toBeLessThanOrEqual(10 * one);
    expect(cache.size).toBe(10);
    expect(cache.get("p-999")?.person()?.id).toBe(personIdFor("p-999"));
    expect(cache.get("p-989")).toBeUndefined();
  });

  test("a person under several IDs counts its size once, shared among them", () => {
    const [shared] = components([
      identityFact("born", "s-1", personIdFor("s-1"), ["2024-01-01 00:00:00.000000" as Timestamp, 1]),
      identityFact("joined", "s-1", "s-2", ["2024-01-01 00:00:00.000000" as Timestamp, 2]),
    ]);
    const cache = personCache(1_000_000);
    cachePerson(cache, shared!);
    expect([cache.get("s-1"), cache.get("s-2")]).toEqual([shared!, shared!]);
    expect(cache.calculatedSize).toBeLessThanOrEqual(shared!.bytes + 1);
  });

  test("a person larger than the whole budget is not kept", () => {
    const cache = personCache(1_000);
    cachePerson(cache, person("big", 10_000));
    expect(cache.get("big")).toBeUndefined();
  });
});
