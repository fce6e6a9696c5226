import { literal, quoteIdentifier } from "../sql";

/** A column the engine computes on insert. `SELECT *` leaves it out; a query names it. */
export interface MaterializedColumn {
  readonly type: string;
  readonly expression: string;
}

/**
 * `properties_typed` (`TYPED_PROPERTIES`): the properties in the engine's JSON type. Text that is not valid JSON (only
 * a writable query port could store such a row) is an empty object, never a failed insert.
 */
export const TYPED_PROPERTIES: Readonly<Record<string, MaterializedColumn>> = {
  properties_typed: { type: "JSON", expression: "JSONExtract(properties, 'JSON')" },
};

/** Property columns are named as PostHog names its materialized columns. */
const PREFIX = "mat_";

/** The column that holds a property key's values (`MATERIALIZED_PROPERTIES`). */
const propertyColumn = (key: string): string => `${PREFIX}${key}`;

/** The property key a column holds, if it is a property column. */
export const propertyKeyOf = (column: string): string | undefined =>
  column.startsWith(PREFIX) ? column.slice(PREFIX.length) : undefined;

/**
 * The columns of `keys` (docs/analytics.md#property-columns): each key's value as text, as `JSONExtract` gives a
 * String: a string as it is, a number or a boolean as its JSON, an object or array as its JSON text, `''` where the
 * event lacks the key or sent `null`. Every column reads its key from the same tuple of all the keys, one
 * expression, which the engine computes once an insert for all of them: the properties are parsed once an event,
 * where a `JSONExtractString` a column parsed them once a key. The keys are sorted, so the expression does not
 * depend on the order a setting lists them in.
 */
export function propertyColumns(keys: readonly string[]): Record<string, MaterializedColumn> {
  const sorted = [...new Set(keys)].sort();
  const tuple = literal(`Tuple(${sorted.map((key) => `${quoteIdentifier(key)} String`).join(", ")})`);
  return Object.fromEntries(
    sorted.map((key) => [
      propertyColumn(key),
      { type: "String", expression: `tupleElement(JSONExtract(properties, ${tuple}), ${literal(key)})` },
    ]),
  );
}
