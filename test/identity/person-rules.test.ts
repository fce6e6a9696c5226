import { describe, expect, test } from "bun:test";
import type { CapturedEvent } from "../../src/contract/event";
import { isLinkable, linkedIdOf, personUpdatesOf } from "../../src/identity/person-rules";

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
    // inside one pair of quotes, as a client that JSON-encodes an ID twice sends it (PostHog's list has these)
    '"undefined"',
    '"null"',
    "'undefined'",
    '"[object Object]"',
    '"NaN"',
    ' "anonymous" ',
    '""',
  ])("%p never links", (id) => expect(isLinkable(id)).toBe(false));

  test.each(["user-1", "anonymous-1", "00", "nullable", "1", "a@b.c", '"user-1"', '"undefined', "'null\"", `"'null'"`])(
    "%p links",
    (id) => expect(isLinkable(id)).toBe(true),
  );
});

describe("linkedIdOf", () => {
  test("$identify links $anon_distinct_id, $create_alias and $merge_dangerously link alias; others nothing", () => {
    expect(linkedIdOf(event("$identify", "user", { $anon_distinct_id: "anon" }))).toBe("anon");
    expect(linkedIdOf(event("$create_alias", "user", { alias: "other" }))).toBe("other");
    expect(linkedIdOf(event("$merge_dangerously", "user", { alias: "other" }))).toBe("other");
    expect(linkedIdOf(event("$merge_dangerously", "user", { $anon_distinct_id: "anon" }))).toBeUndefined();
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

describe("personUpdatesOf", () => {
  test("$set, $set_once and $unset (a list, or an object's keys) are read from properties", () => {
    expect(personUpdatesOf({ $set: { a: 1 }, $set_once: { b: 2 }, $unset: ["c"] })).toEqual({
      set: { a: 1 },
      setOnce: { b: 2 },
      unset: ["c"],
    });
    expect(personUpdatesOf({ $unset: { a: null } })?.unset).toEqual(["a"]);
    expect(personUpdatesOf({ other: 1 })).toBeUndefined();
  });

  test("updates that are not objects (or lists, for $unset) are ignored", () => {
    expect(personUpdatesOf({ $set: "a", $set_once: [1], $unset: "a" })).toBeUndefined();
    expect(personUpdatesOf({ $unset: ["a", 1, null] })?.unset).toEqual(["a"]);
  });
});
