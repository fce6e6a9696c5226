import { describe, expect, test } from "bun:test";
import { LruCache } from "../../../src/storage/identity/cache";

describe("LruCache", () => {
  test("evicts the least recently used entry past capacity", () => {
    const cache = new LruCache<string, number>(2, 1_000);
    cache.set("a", 1, 0);
    cache.set("b", 2, 0);
    expect(cache.get("a", 1)).toBe(1); // a is now the most recent
    cache.set("c", 3, 2);
    expect(cache.size).toBe(2);
    expect(cache.get("b", 3)).toBeUndefined();
    expect(cache.get("a", 3)).toBe(1);
    expect(cache.get("c", 3)).toBe(3);
  });

  test("entries expire ttl after they were set, however often they are read", () => {
    const cache = new LruCache<string, number>(10, 100);
    cache.set("a", 1, 0);
    expect(cache.get("a", 50)).toBe(1);
    expect(cache.get("a", 99)).toBe(1);
    expect(cache.get("a", 100)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  test("delete forgets", () => {
    const cache = new LruCache<string, number>(10, 100);
    cache.set("a", 1, 0);
    cache.delete("a");
    expect(cache.get("a", 1)).toBeUndefined();
  });
});
