import { describe, expect, test } from "bun:test";
import { TtlCache } from "../../../src/storage/identity/cache";

describe("TtlCache", () => {
  test("past capacity, evicts the entry set longest ago (the next to expire), however often it was read", () => {
    const cache = new TtlCache<string, number>(2, 1_000);
    cache.set("a", 1, 0);
    cache.set("b", 2, 1);
    expect(cache.get("a", 1)).toBe(1);
    cache.set("c", 3, 2);
    expect(cache.size).toBe(2);
    expect(cache.get("a", 3)).toBeUndefined();
    expect(cache.get("b", 3)).toBe(2);
    expect(cache.get("c", 3)).toBe(3);
  });

  test("setting an entry again renews it and moves it last in line for eviction", () => {
    const cache = new TtlCache<string, number>(2, 100);
    cache.set("a", 1, 0);
    cache.set("b", 2, 1);
    cache.set("a", 10, 50);
    cache.set("c", 3, 51);
    expect(cache.get("b", 52)).toBeUndefined();
    expect(cache.get("a", 149)).toBe(10);
    expect(cache.get("a", 150)).toBeUndefined();
  });

  test("entries expire ttl after they were set, however often they are read", () => {
    const cache = new TtlCache<string, number>(10, 100);
    cache.set("a", 1, 0);
    expect(cache.get("a", 50)).toBe(1);
    expect(cache.get("a", 99)).toBe(1);
    expect(cache.get("a", 100)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  test("delete forgets", () => {
    const cache = new TtlCache<string, number>(10, 100);
    cache.set("a", 1, 0);
    cache.delete("a");
    expect(cache.get("a", 1)).toBeUndefined();
  });
});
