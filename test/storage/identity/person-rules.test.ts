import { describe, expect, test } from "bun:test";
import type { CapturedEvent } from "../../../src/event";
import {
  isLinkable,
  linkedIdOf,
  mergedProperties,
  personUpdatesOf,
  updatedProperties,
} from "../../../src/storage/identity/person-rules";

const event = (name: string, distinctId: string, properties: Record<string, unknown>) =>
  ({ event: name, distinctId, properties }) as unknown as CapturedEvent;

describe("placeholder IDs", () => {
  test.each([
    "anonymous",
    "Anonymous",
    "null",
    "NULL",
    "undefined",
    "None",
    "nan",
    "NaN",
    "0",
    "[object Object]",
    "",
    "   ",
    " null ",
    "guest",
    "distinct_id",
    "true",
    "false",
    "email",
  ])("%p never links", (id) => expect(isLinkable(id)).toBe(false));

  test.each(["user-1", "anonymous-1", "00", "nullable", "1", "a@b.c"])("%p links", (id) =>
    expect(isLinkable(id)).toBe(true),
  );
});

describe("linkedIdOf", () => {
  test("$identify links $anon_distinct_id, $create_alias links alias; other events link nothing", () => {
    expect(linkedIdOf(event("$identify", "user", { $anon_distinct_id: "anon" }))).toBe("anon");
    expect(linkedIdOf(event("$create_alias", "user", { alias: "other" }))).toBe("other");
    expect(linkedIdOf(event("$create_alias", "user", { $anon_distinct_id: "anon" }))).toBeUndefined();
    expect(linkedIdOf(event("$pageview", "user", { $anon_distinct_id: "anon", alias: "x" }))).toBeUndefined();
    expect(linkedIdOf(event("$identify", "user", {}))).toBeUndefined();
  });

  test("numbers are IDs; equal IDs, placeholders on either side and non-IDs link nothing", () => {
    expect(linkedIdOf(event("$identify", "user", { $anon_distinct_id: 42 }))).toBe("42");
    expect(linkedIdOf(event("$identify", "user", { $anon_distinct_id: "user" }))).toBeUndefined();
    expect(linkedIdOf(event("$identify", "user", { $anon_distinct_id: "undefined" }))).toBeUndefined();
    expect(linkedIdOf(event("$identify", "anonymous", { $anon_distinct_id: "anon" }))).toBeUndefined();
    expect(linkedIdOf(event("$identify", "user", { $anon_distinct_id: { id: 1 } }))).toBeUndefined();
    expect(linkedIdOf(event("$identify", "user", { $anon_distinct_id: "" }))).toBeUndefined();
  });
});

describe("person property updates", () => {
  const apply = (current: Record<string, unknown>, properties: Record<string, unknown>) => {
    const updates = personUpdatesOf(properties);
    const updated = updates && updatedProperties(JSON.stringify(current), updates);
    return updated === undefined ? undefined : JSON.parse(updated);
  };

  test("$set overwrites, $set_once fills only absent keys, $unset removes", () => {
    expect(apply({ a: 1, b: 2 }, { $set: { a: 10, c: 3 } })).toEqual({ a: 10, b: 2, c: 3 });
    expect(apply({ a: 1 }, { $set_once: { a: 10, b: 2 } })).toEqual({ a: 1, b: 2 });
    expect(apply({ a: 1, b: 2, c: 3 }, { $unset: ["a", "c", "missing"] })).toEqual({ b: 2 });
    expect(apply({ a: 1, b: 2 }, { $unset: { a: null } })).toEqual({ b: 2 });
  });

  test("a key set to null is kept, with the value null", () => {
    expect(apply({ a: 1 }, { $set_once: { a: 2, n: null } })).toEqual({ a: 1, n: null });
    expect(apply({ n: null }, { $set_once: { n: 5 } })).toBeUndefined();
  });

  test("within one event: $set beats $set_once, $unset beats both", () => {
    expect(apply({}, { $set_once: { a: "once" }, $set: { a: "set" } })).toEqual({ a: "set" });
    expect(apply({ a: 0, keep: 1 }, { $set: { a: 1 }, $set_once: { b: 2 }, $unset: ["a", "b"] })).toEqual({ keep: 1 });
  });

  test("no change is reported as undefined, so the person is not rewritten", () => {
    expect(apply({ a: 1 }, { $set: { a: 1 } })).toBeUndefined();
    expect(apply({ a: 1 }, { $set_once: { a: 2 } })).toBeUndefined();
    expect(apply({ a: 1 }, { $unset: ["b"] })).toBeUndefined();
    expect(apply({ a: 1 }, { other: 1 })).toBeUndefined();
  });

  test("updates that are not objects (or lists, for $unset) are ignored", () => {
    expect(personUpdatesOf({ $set: "a", $set_once: [1], $unset: "a" })).toBeUndefined();
    expect(personUpdatesOf({ $unset: ["a", 1, null] })?.unset).toEqual(["a"]);
  });

  test("a merge keeps both persons' keys, the surviving person's value where both have one", () => {
    const merged = mergedProperties('{"a":1,"b":2,"__proto__":{"x":1}}', '{"b":3,"c":4}');
    expect(JSON.parse(merged)).toEqual(JSON.parse('{"a":1,"b":3,"__proto__":{"x":1},"c":4}'));
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  test("keys such as __proto__ are stored as ordinary keys", () => {
    const next = apply({}, JSON.parse('{"$set": {"__proto__": {"polluted": true}, "constructor": 1}}'));
    expect(JSON.parse(JSON.stringify(next))).toEqual(JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1}'));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
