import { literal, quoteIdentifier } from "../storage";
import { QueryError } from "./errors";
import { OPAQUE, unescapeText } from "./tokens";

/**
 * `{name:Type}` placeholders bound to `param_<name>` values, as typed literals written into the client's text
 * before the engine parses it, so that the engine checks and prints the statement with its values (and an alias
 * or identifier placeholder, which the engine's print would drop, is there). The engine's own parameter binding is
 * not used: it keeps the values in state that queries on other sessions share (see src/storage/sql.ts), and chDB
 * re-escapes a value it binds, so the text a client sent would not reach the type's parser as sent.
 *
 * A value is the text ClickHouse's HTTP interface takes: the type's text form, with a `String`'s escapes (`\t`,
 * `\n`, `\\`, …) still in it, and `\N` for NULL. So a `String` is unescaped into a literal; any other type gets
 * its text cast to it (`CAST('…' AS Type)`), which parses it as the server would; an `Identifier` becomes a quoted
 * identifier.
 */
export function bindParams(text: string, params: Readonly<Record<string, string>>): string {
  // A placeholder is found only outside string literals, quoted identifiers, comments and heredocs: the lexer's
  // own patterns for them come first in the alternation, so the scan steps over them whole.
  return text.replace(
    PLACEHOLDER,
    (token, _heredoc: string | undefined, name: string | undefined, type: string | undefined) => {
      if (name === undefined || type === undefined) return token;
      return boundValue(paramValue(params, name), type);
    },
  );
}

/**
 * `{name:Type}` placeholders in an INSERT's `VALUES` rows (`format` Values), bound as the data they stand for. A
 * server evaluates such a row as an expression; the port reads `VALUES` rows as data only (literals, see
 * insert.ts), so each placeholder becomes its value's literal: a quoted string for the types whose values are
 * written as strings (a `String`'s escapes read as the `String`'s, as above), `NULL` for `\N`, and the value's own
 * text for numbers, arrays, tuples and maps, whose text form is their literal. The rows are data the client could
 * send as they are: nothing here reaches SQL, and a value that is no literal of its type fails as a row would.
 */
export function bindValuesRows(format: string, data: Uint8Array, params: Readonly<Record<string, string>>): Uint8Array {
  if (format.toLowerCase() !== "values" || !data.includes(0x7b)) return data;
  const rows = new TextDecoder()
    .decode(data)
    .replace(PLACEHOLDER, (token, _heredoc: string | undefined, name: string | undefined, type: string | undefined) => {
      if (name === undefined || type === undefined) return token;
      const value = paramValue(params, name);
      if (value === "\\N") return "NULL";
      if (isStringLike(type)) return literal(unescapeText(value));
      return QUOTED.test(type) ? literal(value) : value;
    });
  return new TextEncoder().encode(rows);
}

/** Types whose literal in a `VALUES` row is a quoted string (as `Nullable` or `LowCardinality` too). */
const QUOTED =
  /^(?:Nullable\(|LowCardinality\()*(?:Date|Date32|DateTime|DateTime64|Time|Time64|UUID|IPv4|IPv6|Enum8|Enum16|Enum|JSON|Object)\b/;

function paramValue(params: Readonly<Record<string, string>>, name: string): string {
  const value = params[name];
  if (value === undefined) {
    throw new QueryError(
      456,
      "UNKNOWN_QUERY_PARAMETER",
      `Code: 456. DB::Exception: Substitution \`${name}\` is not set. (UNKNOWN_QUERY_PARAMETER)`,
    );
  }
  return value;
}

const PLACEHOLDER = new RegExp(`${OPAQUE}|\\{\\s*([A-Za-z_][A-Za-z0-9_]*)\\s*:\\s*([^{}]+?)\\s*\\}`, "g");

function boundValue(value: string, type: string): string {
  if (type === "Identifier") return quoteIdentifier(value);
  if (value === "\\N") return `CAST(NULL AS ${type})`;
  if (type === "String") return literal(unescapeText(value));
  if (/^Map\s*\(/.test(type)) return mapValue(value, type);
  return `CAST(${literal(isStringLike(type) ? unescapeText(value) : value)} AS ${type})`;
}

/**
 * The engine has no CAST from a string to a Map, but it has one to an array of maps, which reads each map's text
 * form: the value, in brackets, is an array of one map. (Not `format()`, which a read-only session refuses, nor the
 * value as SQL, which would be the client's text in the statement.) More than one map is refused, as a server would.
 */
function mapValue(value: string, type: string): string {
  const array = `CAST(${literal(`[${value}]`)} AS Array(${type}))`;
  return `arrayElement(${array}, throwIf(length(${array}) != 1, 'Cannot parse the value of a Map query parameter') + 1)`;
}

/** Types whose text form is a whole string (escapes and all), not a literal to parse. */
const isStringLike = (type: string) => /^(Nullable\(|LowCardinality\()*(String|FixedString\(\d+\))\)*$/.test(type);
