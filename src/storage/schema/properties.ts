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

/**
 * A family of tuple columns: each key of a JSON object text column (`source`) in a column of its own, `<prefix><key>`.
 * Property columns are named as PostHog names its materialized columns: `mat_` for the event's properties, `pmat_`
 * for its person's (`person_properties`, as the event's flush left them).
 */
interface TupleFamily {
  readonly prefix: string;
  readonly source: string;
}
const EVENT: TupleFamily = { prefix: "mat_", source: "properties" };
const PERSON: TupleFamily = { prefix: "pmat_", source: "person_properties" };

/** The key a column of `family` holds, if it is one of its columns. */
const keyOf =
  ({ prefix }: TupleFamily) =>
  (column: string): string | undefined =>
    column.startsWith(prefix) ? column.slice(prefix.length) : undefined;

/** The property key a column holds, if it is a property column (`mat_`). */
export const propertyKeyOf = keyOf(EVENT);
/** The person property key a column holds, if it is a person property column (`pmat_`). */
export const personPropertyKeyOf = keyOf(PERSON);

/**
 * The columns of `keys` (docs/analytics.md#property-columns): each key's value as text, as `JSONExtract` gives a
 * String: a string as it is, a number or a boolean as its JSON, an object or array as its JSON text, `''` where the
 * object lacks the key or holds `null`, or the text is empty. Every column reads its key from the same tuple of all
 * the keys, one expression, which the engine computes once an insert for all of them: the text is parsed once an
 * event, where a `JSONExtractString` a column parsed it once a key. The keys are sorted, so the expression does not
 * depend on the order a setting lists them in.
 */
const tupleColumns =
  ({ prefix, source }: TupleFamily) =>
  (keys: readonly string[]): Record<string, MaterializedColumn> => {
    const sorted = [...new Set(keys)].sort();
    const tuple = literal(`Tuple(${sorted.map((key) => `${quoteIdentifier(key)} String`).join(", ")})`);
    const expression = (key: string) => `tupleElement(JSONExtract(${source}, ${tuple}), ${literal(key)})`;
    return Object.fromEntries(
      sorted.map((key) => [`${prefix}${key}`, { type: "String", expression: expression(key) }]),
    );
  };

/** `mat_<key>` (`MATERIALIZED_PROPERTIES`): the event's properties. */
export const propertyColumns = tupleColumns(EVENT);
/**
 * `pmat_<key>` (`MATERIALIZED_PERSON_PROPERTIES`, docs/analytics.md#person-property-columns): the person's
 * properties as the event stores them, `''` in every column where it stores none (`PERSONS_ON_EVENTS=0`).
 */
export const personPropertyColumns = tupleColumns(PERSON);
