import type { Timestamp } from "../contract";

/** DateTime64's range; outside it ClickHouse would silently clamp. */
const MIN_YEAR = 1900;
const MAX_YEAR = 2299;

// date, `T` (or a space, as RFC 3339 allows), hh:mm, optional :ss and fraction, optional offset (absent means UTC)
const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$/;

/**
 * Parses an ISO 8601 date-time (`2024-05-01T12:00:00.123456+02:00`) into UTC with microsecond precision.
 * Digits past the sixth are truncated. Returns undefined for anything that is not a real instant in range:
 * other shapes, impossible dates such as February 30, or years outside 1900–2299.
 */
export function parseTimestamp(text: string): Timestamp | undefined {
  const fast = parseCanonical(text);
  if (fast !== undefined) return fast;
  const match = ISO_DATE_TIME.exec(text);
  if (match === null) return undefined;
  const [
    ,
    year,
    month,
    day,
    hour,
    minute,
    second = "00",
    fraction = "",
    ,
    sign,
    offsetHours = "0",
    offsetMinutes = "0",
  ] = match;
  const y = Number(year);
  const mo = Number(month);
  const d = Number(day);
  const h = Number(hour);
  const mi = Number(minute);
  const s = Number(second);
  const oh = Number(offsetHours);
  const om = Number(offsetMinutes);
  if (oh > 23 || om > 59 || !realDateTime(y, mo, d, h, mi, s)) return undefined;
  // A leap second (`23:59:60`) has no place in UTC arithmetic: it becomes the last microsecond of its minute.
  const leap = s === 60;
  const micros = leap ? "999999" : fraction.slice(0, 6).padEnd(6, "0");
  const offsetMs = (sign === "-" ? -1 : 1) * (oh * 60 + om) * 60_000;
  // Already UTC (what SDKs send): the text is the answer, no date arithmetic needed.
  if (offsetMs === 0 && !leap) return `${year}-${month}-${day} ${hour}:${minute}:${second}.${micros}` as Timestamp;

  const utc = new Date(Date.UTC(y, mo - 1, d, h, mi, leap ? 59 : s) - offsetMs);
  if (utc.getUTCFullYear() < MIN_YEAR || utc.getUTCFullYear() > MAX_YEAR) return undefined;
  return format(utc, micros);
}

/** `YYYY-MM-DDTHH:MM:SS.sssZ`, as `toISOString` and most SDKs write it: the ISO pattern's answer without its match. */
const CANONICAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * The common shape read without the general pattern's captures (an import checks every event's timestamp);
 * undefined for anything else, and for a leap second, which the general reading handles. Same answers.
 */
function parseCanonical(text: string): Timestamp | undefined {
  if (text.length !== 24 || !CANONICAL.test(text)) return undefined;
  const y = Number(text.slice(0, 4));
  const mo = Number(text.slice(5, 7));
  const d = Number(text.slice(8, 10));
  const h = Number(text.slice(11, 13));
  const mi = Number(text.slice(14, 16));
  const s = Number(text.slice(17, 19));
  if (s === 60 || !realDateTime(y, mo, d, h, mi, s)) return undefined;
  return `${text.slice(0, 10)} ${text.slice(11, 23)}000` as Timestamp;
}

/**
 * Whether the fields are a date and time in DateTime64's range that exists (a second of 60 is a leap second), not
 * February 30.
 */
function realDateTime(y: number, mo: number, d: number, h: number, mi: number, s: number): boolean {
  if (y < MIN_YEAR || y > MAX_YEAR || h > 23 || mi > 59 || s > 60) return false;
  return mo >= 1 && mo <= 12 && d >= 1 && d <= daysInMonth(y, mo);
}

function daysInMonth(year: number, month: number): number {
  if (month !== 2) return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
}

/** The current time, for events sent without a timestamp and for ingestion times. */
export function timestampFromDate(date: Date): Timestamp {
  return format(date, String(date.getUTCMilliseconds()).padStart(3, "0").padEnd(6, "0"));
}

function format(whole: Date, micros: string): Timestamp {
  // toISOString: YYYY-MM-DDTHH:mm:ss.sssZ for every year in range
  const iso = whole.toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}.${micros}` as Timestamp;
}

/** A timestamp as milliseconds since 1970 (its microseconds past the millisecond dropped). */
export function millisOf(timestamp: Timestamp): number {
  return Date.parse(`${timestamp.slice(0, 23).replace(" ", "T")}Z`);
}

/**
 * `timestamp` moved by `ms` milliseconds, its microseconds past the millisecond kept; undefined when that lands
 * outside 1900–2299.
 */
export function shifted(timestamp: Timestamp, ms: number): Timestamp | undefined {
  if (!Number.isFinite(ms)) return undefined;
  const moved = new Date(millisOf(timestamp) + Math.trunc(ms));
  const year = moved.getUTCFullYear();
  if (!(year >= MIN_YEAR && year <= MAX_YEAR)) return undefined;
  return format(moved, `${String(moved.getUTCMilliseconds()).padStart(3, "0")}${timestamp.slice(23, 26)}`);
}
