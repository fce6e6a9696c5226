/**
 * JSON as this service reads it. A JavaScript number holds about 15 significant digits, so a plain
 * `JSON.parse` turns `12345678901234567890` into `12345678901234567000`, `-0` into `0` and `1e400` into
 * `Infinity`. Here a number whose value would change is kept as its source text instead (a raw JSON value,
 * written back verbatim by `JSON.stringify`), so IDs keep their digits and properties are stored as sent.
 */

/** A number kept as the text it was sent as. */
export interface RawNumber {
  readonly rawJSON: string;
}

// JSON.rawJSON / isRawJSON and the reviver's source text (TC39 "JSON.parse source text access", in Bun's
// JavaScriptCore); TypeScript's lib does not declare them yet.
type Reviver = (this: unknown, key: string, value: unknown, context: { source?: string }) => unknown;
const Json = JSON as typeof JSON & {
  rawJSON(text: string): RawNumber;
  isRawJSON(value: unknown): value is RawNumber;
  parse(text: string, reviver: Reviver): unknown;
};

/**
 * A number token that may lose its value as a double: 16 or more digits, an exponent, or a leading `-0`. Only
 * bodies with one pay for the slower source-preserving parse; the test is a superset of `losesValue`, so both
 * paths read every number the same way.
 */
const MAYBE_LOSSY_NUMBER = /[:[,]\s*(?:-0|-?[\d.]{16,}|-?\d+(?:\.\d+)?[eE])/;

/** Parses JSON text, keeping numbers whose value a double cannot hold as `RawNumber`s. Throws SyntaxError. */
export function parseJson(text: string): unknown {
  if (!MAYBE_LOSSY_NUMBER.test(text)) return JSON.parse(text);
  try {
    return Json.parse(text, keepLossyNumbers);
  } catch (error) {
    // The reviver recurses, so a deeply nested document overflows the stack; the plain parser does not, and
    // the nesting limit refuses such a document afterwards anyway.
    if (error instanceof RangeError) return JSON.parse(text);
    throw error;
  }
}

function keepLossyNumbers(_key: string, value: unknown, context: { source?: string }): unknown {
  if (typeof value !== "number" || context.source === undefined) return value;
  return losesValue(context.source, value) ? Json.rawJSON(context.source) : value;
}

/** Whether `value` differs from the number the text denotes (or could: more than 15 significant digits). */
function losesValue(source: string, value: number): boolean {
  if (!Number.isFinite(value)) return true;
  const mantissa = source.split(/[eE]/, 1)[0]!;
  if (value === 0) return source.startsWith("-") || /[1-9]/.test(mantissa);
  const digits = mantissa.replace(/[-.]/g, "").replace(/^0+/, "").replace(/0+$/, "");
  return digits.length > 15;
}

export function isRawNumber(value: unknown): value is RawNumber {
  return Json.isRawJSON(value);
}

/** A number as text: its source text if it was kept raw, else JavaScript's shortest form. */
export function numberText(value: number | RawNumber): string {
  return typeof value === "number" ? String(value) : value.rawJSON;
}

/** A JSON object: not null, not an array, not a raw number. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !isRawNumber(value);
}

/**
 * Whether objects and arrays in `value` nest more than `max` levels (`{}` is one level). Iterative, so a
 * document nested a million deep is measured without overflowing the stack; it stops at the first path too deep.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [node, depth] = next;
    if (typeof node !== "object" || node === null || isRawNumber(node)) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}
