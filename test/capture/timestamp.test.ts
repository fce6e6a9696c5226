import { describe, expect, test } from "bun:test";
import { millisOf, parseTimestamp, shifted, timestampFromDate } from "../../src/capture/timestamp";
import type { Timestamp } from "../../src/contract";
import { random } from "../helpers/identity-model";

describe("parseTimestamp", () => {
  test.each([
    ["2024-05-01T12:00:00Z", "2024-05-01 12:00:00.000000"],
    ["2024-05-01T12:00:00.123Z", "2024-05-01 12:00:00.123000"],
    ["2024-05-01T12:00:00.123456+00:00", "2024-05-01 12:00:00.123456"],
    ["2024-05-01T12:00:00.1234567+02:00", "2024-05-01 10:00:00.123456"],
    ["2024-05-01T01:30:00-05:30", "2024-05-01 07:00:00.000000"],
    ["2024-05-01T23:00:00-0200", "2024-05-02 01:00:00.000000"],
    ["2024-05-01T12:00:00+01", "2024-05-01 11:00:00.000000"],
    ["2024-05-01 12:00:00z", "2024-05-01 12:00:00.000000"],
    ["2024-05-01t12:00", "2024-05-01 12:00:00.000000"],
    ["2024-05-01T12:00:00,5Z", "2024-05-01 12:00:00.500000"],
    ["2024-05-01T12:00:00", "2024-05-01 12:00:00.000000"],
    ["2024-02-29T00:00:00Z", "2024-02-29 00:00:00.000000"],
    ["2000-02-29T00:00:00Z", "2000-02-29 00:00:00.000000"],
    ["2024-04-30T00:00:00+00:00", "2024-04-30 00:00:00.000000"],
    ["2024-03-01T00:30:00+01:00", "2024-02-29 23:30:00.000000"],
    ["1900-01-01T00:00:00Z", "1900-01-01 00:00:00.000000"],
    ["2299-12-31T23:59:59.999999Z", "2299-12-31 23:59:59.999999"],
    // a leap second is the last microsecond of its minute, wherever the offset puts it
    ["2016-12-31T23:59:60Z", "2016-12-31 23:59:59.999999"],
    ["2016-12-31T23:59:60.5Z", "2016-12-31 23:59:59.999999"],
    ["2017-01-01T00:59:60+01:00", "2016-12-31 23:59:59.999999"],
  ])("%s is %s in UTC", (text, expected) => {
    expect(parseTimestamp(text)).toBe(expected as never);
  });

  test.each([
    "",
    "yesterday",
    "2024-05-01",
    "2024-05-01T12",
    "2024-13-01T00:00:00Z",
    "2023-02-29T00:00:00Z",
    "2100-02-29T00:00:00Z",
    "2024-02-30T00:00:00+01:00",
    "2024-00-10T00:00:00Z",
    "2024-05-00T00:00:00Z",
    "2024-05-32T00:00:00Z",
    "2024-04-31T00:00:00Z",
    "2024-05-01T24:00:00Z",
    "2024-05-01T12:60:00Z",
    "2024-05-01T12:00:61Z",
    "2024-05-01T12:00:00+24:00",
    "2024-05-01T12:00:00 UTC",
    "1899-12-31T23:59:59Z",
    "1900-01-01T00:30:00+01:00",
    "2300-01-01T00:00:00Z",
    "0050-01-01T00:00:00Z",
    "1714564800",
    " 2024-05-01T12:00:00Z",
  ])("%p is not a valid timestamp", (text) => {
    expect(parseTimestamp(text)).toBeUndefined();
  });

  test("an instant reads the same in UTC and at any offset (the UTC text and the date arithmetic agree)", () => {
    const { next } = random(7);
    for (let i = 0; i < 2_000; i++) {
      const ms = Date.UTC(1901, 0, 2) + Math.floor(next() * (Date.UTC(2298, 11, 30) - Date.UTC(1901, 0, 2)));
      const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:mm:ss.sssZ
      const expected = `${iso.slice(0, 10)} ${iso.slice(11, 23)}000`;
      expect(parseTimestamp(iso)).toBe(expected as never);
      const offset = Math.floor(next() * 27 - 13) * 60 + (next() < 0.2 ? 30 : 0); // minutes east of UTC
      const local = new Date(ms + offset * 60_000).toISOString().slice(0, 23);
      const sign = offset < 0 ? "-" : "+";
      const hhmm = `${String(Math.floor(Math.abs(offset) / 60)).padStart(2, "0")}:${String(Math.abs(offset) % 60).padStart(2, "0")}`;
      expect(parseTimestamp(`${local}${sign}${hhmm}`)).toBe(expected as never);
    }
  });

  test("the common shape (toISOString's) reads as the general pattern reads it, odd values included", () => {
    // read by the short path, or left by it to the general one: the answers must be the general one's
    const general = (text: string) => parseTimestamp(text.replace("T", "t")); // `t` is only ever read the general way
    const digits = (n: number, width: number) => String(n).padStart(width, "0");
    const { next } = random(11);
    const pick = (values: readonly number[]) => values[Math.floor(next() * values.length)]!;
    for (let i = 0; i < 5_000; i++) {
      const text = `${digits(pick([1899, 1900, 1970, 2000, 2024, 2100, 2299, 2300, 9999]), 4)}-${digits(pick([0, 1, 2, 4, 12, 13]), 2)}-${digits(pick([0, 1, 28, 29, 30, 31, 32]), 2)}T${digits(pick([0, 12, 23, 24]), 2)}:${digits(pick([0, 59, 60]), 2)}:${digits(pick([0, 59, 60, 61]), 2)}.${digits(pick([0, 7, 999]), 3)}Z`;
      expect(parseTimestamp(text)).toBe(general(text));
    }
    expect(parseTimestamp("2024-02-29T23:59:60.123Z")).toBe("2024-02-29 23:59:59.999999" as never); // a leap second
    expect(parseTimestamp("2023-02-29T12:00:00.000Z")).toBeUndefined();
    expect(parseTimestamp("2024-05-01T12:00:00.042Z")).toBe("2024-05-01 12:00:00.042000" as never);
  });

  test("timestampFromDate keeps milliseconds", () => {
    expect(timestampFromDate(new Date("2024-05-01T12:00:00.042Z"))).toBe("2024-05-01 12:00:00.042000" as never);
  });
});

describe("shifted", () => {
  test("moves a timestamp by whole milliseconds and keeps its microseconds; outside 1900–2299 is no timestamp", () => {
    const at = "2024-05-01 12:00:00.123456" as Timestamp;
    expect(shifted(at, 1_500)).toBe("2024-05-01 12:00:01.623456" as Timestamp);
    expect(shifted(at, -86_400_000)).toBe("2024-04-30 12:00:00.123456" as Timestamp);
    expect(millisOf(at)).toBe(Date.UTC(2024, 4, 1, 12, 0, 0, 123));
    expect(shifted("1900-01-01 00:00:00.000000" as Timestamp, -1)).toBeUndefined();
    expect(shifted(at, Number.POSITIVE_INFINITY)).toBeUndefined();
    expect(shifted(at, 300 * 365 * 86_400_000)).toBeUndefined();
  });
});
