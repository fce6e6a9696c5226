import { describe, expect, test } from "bun:test";
import { columnText, distinctIdFrom, LIMITS } from "../../src/contract/event";
import { parseJson } from "../../src/contract/json";

describe("columnText", () => {
  test("a lone surrogate becomes U+FFFD, like invalid UTF-8; pairs are kept", () => {
    expect(columnText("x\ud800", 200)).toBe("x\ufffd");
    expect(columnText("\udc00y", 200)).toBe("\ufffdy");
    expect(columnText("😀", 200)).toBe("😀");
  });

  test("longer text is cut to the limit, never through a surrogate pair", () => {
    expect(columnText("a".repeat(300), 200)).toBe("a".repeat(200));
    expect(columnText(`${"a".repeat(199)}😀`, 200)).toBe("a".repeat(199));
    expect(columnText(`${"a".repeat(198)}😀`, 200)).toBe(`${"a".repeat(198)}😀`);
  });
});

describe("distinctIdFrom", () => {
  test("numbers keep the digits sent when a double cannot hold them", () => {
    const { a, b, c } = parseJson('{"a":12345678901234567890,"b":12345678901234567891,"c":1e400}') as Record<
      string,
      unknown
    >;
    expect([distinctIdFrom(a), distinctIdFrom(b), distinctIdFrom(c)]).toEqual([
      "12345678901234567890",
      "12345678901234567891",
      "1e400",
    ]);
    expect(distinctIdFrom(42)).toBe("42");
  });

  test("IDs are bounded and well-formed", () => {
    expect(distinctIdFrom("u".repeat(5_000_000))).toHaveLength(LIMITS.distinctId);
    expect(distinctIdFrom("x\ud800")).toBe("x\ufffd");
    expect(distinctIdFrom("")).toBeUndefined();
  });
});
