import { describe, expect, test } from "bun:test";
import { isObject, isRawNumber, nestsDeeperThan, parseJson } from "../../src/contract/json";

const roundTrip = (text: string) => JSON.stringify(parseJson(text));

describe("parseJson", () => {
  test.each([
    ["[12345678901234567890]", "[12345678901234567890]"],
    ["[12345678901234567891]", "[12345678901234567891]"],
    ["[-0]", "[-0]"],
    ["[-0.0]", "[-0.0]"],
    ["[1e400]", "[1e400]"],
    ["[-1e400]", "[-1e400]"],
    ["[1e-400]", "[1e-400]"],
    ["[0.12345678901234567890123]", "[0.12345678901234567890123]"],
    ["[1234567890.1234567890]", "[1234567890.1234567890]"],
  ])("%s keeps the value it was sent with: %s", (text, stored) => {
    expect(roundTrip(text)).toBe(stored);
  });

  test.each([
    [
      "[1.0, 2.50, 1e2, 100000000000000000000, 0.1, -0.5, 123456789012345]",
      "[1,2.5,100,100000000000000000000,0.1,-0.5,123456789012345]",
    ],
    ['{"uuid":"0190b4a1-7c2d-7e3f-8a4b-5c6d7e8f9a0b","n":7}', '{"uuid":"0190b4a1-7c2d-7e3f-8a4b-5c6d7e8f9a0b","n":7}'],
  ])("numbers a double holds exactly are plain numbers: %s", (text, stored) => {
    expect(roundTrip(text)).toBe(stored);
  });

  test("the same number reads the same whether or not the body also needs the careful parse", () => {
    const plain = parseJson('{"id":1.50}') as { id: number };
    const careful = parseJson('{"id":1.50,"big":12345678901234567890}') as { id: number; big: unknown };
    expect(plain.id).toBe(1.5);
    expect(careful.id).toBe(1.5);
    expect(isRawNumber(careful.big)).toBe(true);
  });

  test("a document nested a million deep parses, with or without numbers that need care", () => {
    const deep = (number: string) => `${"[".repeat(1_000_000)}${number}${"]".repeat(1_000_000)}`;
    expect(Array.isArray(parseJson(deep("1")))).toBe(true);
    expect(Array.isArray(parseJson(deep("12345678901234567890")))).toBe(true);
  });

  test("malformed JSON is a SyntaxError", () => {
    expect(() => parseJson('{"a":12345678901234567890')).toThrow(SyntaxError);
    expect(() => parseJson("{")).toThrow(SyntaxError);
  });
});

test("a raw number is not an object", () => {
  const value = (parseJson('{"a":1e400}') as { a: unknown }).a;
  expect(isObject(value)).toBe(false);
  expect(isObject({})).toBe(true);
  expect(isObject([])).toBe(false);
  expect(isObject(null)).toBe(false);
});

describe("nestsDeeperThan", () => {
  const nested = (levels: number) => JSON.parse(`${"[".repeat(levels)}${"]".repeat(levels)}`);

  test("counts objects and arrays, each one level", () => {
    expect(nestsDeeperThan({}, 1)).toBe(false);
    expect(nestsDeeperThan({ a: {} }, 1)).toBe(true);
    expect(nestsDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [{ b: 1 }] }, 2)).toBe(true);
    expect(nestsDeeperThan(nested(64), 64)).toBe(false);
    expect(nestsDeeperThan(nested(65), 64)).toBe(true);
  });

  test("measures a million levels without overflowing", () => {
    expect(nestsDeeperThan(nested(1_000_000), 64)).toBe(true);
  });
});
