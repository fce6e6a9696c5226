import {
  ALTER_COMMANDS_REFUSED,
  COLUMN_EXPRESSIONS,
  ENGINES,
  FUNCTIONS_REFUSED,
  NAMING_FUNCTIONS,
  PARSE_ONLY,
  READS,
  SYSTEM_DATABASES,
  SYSTEM_TABLES,
  TABLE_FUNCTIONS,
  TABLE_SETTINGS_REFUSED,
  WRITES,
} from "./allowed";
import { type AstNode, functionName, literalValue, nodeIdentifier } from "./ast";
import { QueryError } from "./errors";
import { identifierName, significant, stringValue, type Token } from "./tokens";
import { checkWritable } from "./writable";

/**
 * What a query on the port may do, judged on the engine's own parse and print of it (`EXPLAIN AST` of the
 * statement as `formatQuery` printed it, and the tokens of that print), never on the client's text. Deny by
 * default: only the statements, table functions, engines and system tables named in allowed.ts pass; only the
 * service's database is reachable. `readonly = 1` on the session is a second wall behind this one, not the first.
 * The threat model and each layer are in docs/query.md#what-the-port-refuses.
 */

/** Whether the query may change data (`QUERY_READONLY=0`, on a POST). */
export type Access = "read" | "write";

/** What the statement is judged against. */
interface Scope {
  readonly access: Access;
  /** The service's database. */
  readonly database: string;
  /** The database an unqualified name is in: the session's current one. */
  readonly currentDatabase: string;
  /**
   * Databases a query may not name: read-only, every one but the service's (and `system` and the schema views,
   * read by their full names only); with writes allowed, every one that is no Atomic database (the filesystem
   * Overlay above all, and the port's own views) whatever else was created through the port.
   */
  readonly otherDatabases: ReadonlySet<string>;
  /** System tables a query may not name: every one the engine has that `SYSTEM_TABLES` does not list. */
  readonly hiddenSystemTables: ReadonlySet<string>;
  /** Refuses a setting of a `SETTINGS` clause as the URL's settings are refused (settings.ts). */
  readonly checkSetting: (name: string, value: string) => void;
  /** Whether a name is a query's setting (rather than a table's, in a CREATE). */
  readonly isQuerySetting: (name: string) => boolean;
}

/**
 * The scope of a query, given every database the engine has (`system.databases`: name and engine), its system
 * tables, and the session's current database.
 */
export function scopeOf(
  access: Access,
  database: string,
  engine: {
    readonly databases: readonly [string, string][];
    readonly systemTables: readonly string[];
    readonly current: string;
  },
  checkSetting: Scope["checkSetting"],
  isQuerySetting: Scope["isQuerySetting"],
): Scope {
  const { databases, systemTables, current } = engine;
  const reachable = (name: string, engine: string) =>
    name === database || SYSTEM_DATABASES.has(name) || (access === "write" && engine === "Atomic");
  const other = databases.filter(([name, engine]) => !reachable(name, engine)).map(([name]) => name);
  const hiddenSystemTables = new Set(systemTables.filter((name) => !SYSTEM_TABLES.has(name)));
  return {
    access,
    database,
    currentDatabase: current,
    otherDatabases: new Set(other),
    hiddenSystemTables,
    checkSetting,
    isQuerySetting,
  };
}

/** Refuses a database a query may not make its current one (`USE`, the `database` parameter). */
export function checkUsable(name: string, scope: Scope): void {
  if (scope.otherDatabases.has(name) || SYSTEM_DATABASES.has(name)) {
    throw denied(
      scope.access === "read"
        ? `Only the database ${scope.database} can be used here`
        : `Database ${name} cannot be used here`,
    );
  }
}

/**
 * Checks a statement. `formatted` is the engine's multi-line print of it and `line` its single-line print; `ast`
 * is the engine's parse of `formatted`.
 */
export function checkStatement(ast: AstNode, formatted: string, line: string, scope: Scope): void {
  if (!READS.has(ast.type) && !(scope.access === "write" && WRITES.has(ast.type))) {
    throw readonly(
      scope.access === "read" ? "Cannot execute query in readonly mode" : `${ast.type} is not allowed here`,
    );
  }
  if (/^(CREATE|ATTACH)( OR REPLACE)? DATABASE /.test(formatted)) checkCreateDatabase(line, scope);
  if (ast.type === "CreateQuery" && ast.children.some((child) => child.type === "Dictionary")) {
    throw denied("dictionaries read from files, URLs or other servers");
  }
  if (ast.type === "UseQuery" && ast.children[0]) checkUsable(nodeIdentifier(ast.children[0]), scope);
  if (WRITES.has(ast.type) && writesSystem(ast)) throw denied("The system databases cannot be changed here");
  if (ast.type === "Explain") {
    const explained = ast.children.find((child) => child.type !== "Set");
    if (explained) checkStatement(explained, formatted, line, scope);
  }
  checkTokens(significant(line), ast.type, scope);
  walk(ast, undefined, scope);
  if (scope.access === "write") checkWritable(ast, line, scope);
}

/**
 * What the tokens of the print show: every database named is the service's (`system` and the schema views only
 * as `system.<table>` of the list above), no file is read or written through `FROM INFILE` or `INTO OUTFILE`, and
 * no table setting places data elsewhere. The AST does not show all of these (`CREATE TABLE t AS db.x`,
 * `SHOW COLUMNS FROM t FROM db`, `MODIFY SETTING`), the print does: it names every identifier it kept.
 */
function checkTokens(tokens: readonly Token[], statement: string, scope: Scope): void {
  tokens.forEach((token, index) => {
    const next = tokens[index + 1];
    const name = identifierName(token);
    if (name !== undefined && scope.otherDatabases.has(name) && !isColumnOf(tokens, index)) {
      throw denied(`Database ${name} is not accessible here`);
    }
    if (name === "system" && next?.text === "." && !isColumnOf(tokens, index)) {
      // one the engine does not have is no secret: the engine answers for it (EXISTS is 0, a read UNKNOWN_TABLE)
      const table = tokens[index + 2] && identifierName(tokens[index + 2]!);
      if (table === undefined || scope.hiddenSystemTables.has(table)) {
        throw denied(`Table system.${(table ?? "").slice(0, 100)} is not accessible here`);
      }
    }
    // a write's other target: a materialized view's TO, MOVE PARTITION … TO TABLE
    if (WRITES.has(statement) && token.kind === "word" && token.text === "TO") {
      const target = tokens[index + 1]?.text === "TABLE" ? tokens[index + 2] : next;
      const name = target && identifierName(target);
      if (name !== undefined && SYSTEM_DATABASES.has(name)) throw denied("The system databases cannot be changed here");
    }
    if (token.kind === "word" && next?.kind === "word") {
      const pair = `${token.text} ${next.text}`;
      if (pair === "INTO OUTFILE" || pair === "FROM INFILE") throw denied(`${pair} reaches files on the server`);
    }
    if (token.text === "SETTINGS" && token.kind === "word") {
      // a CREATE's clauses hold the table's settings and, in its SELECT, the query's: each by what its name is
      for (const [name, value] of settingsClause(tokens, index + 1)) {
        if (statement !== "CreateQuery" || scope.isQuerySetting(name)) scope.checkSetting(name, value);
        else if (TABLE_SETTINGS_REFUSED.test(name) || value.includes("(")) {
          throw denied(`Table setting ${name} is not allowed here`);
        }
      }
    }
    if (
      (statement === "CreateQuery" || statement === "AlterQuery") &&
      token.kind === "word" &&
      next?.text === "=" &&
      TABLE_SETTINGS_REFUSED.test(token.text)
    ) {
      throw denied(`Table setting ${token.text} is not allowed here`);
    }
  });
}

/**
 * The `name = value` pairs of a `SETTINGS` clause whose first name is at `start`, the values as written. A value is
 * one literal: a sign and a token, or a bracketed one (an array, a map, a tuple); what follows it (a `UNION`, a
 * closing bracket, `FORMAT`) is the statement's.
 */
function settingsClause(tokens: readonly Token[], start: number): [string, string][] {
  const pairs: [string, string][] = [];
  let index = start;
  while (tokens[index] && tokens[index + 1]?.text === "=") {
    const name = identifierName(tokens[index]!) ?? "";
    let end = index + 2;
    if (tokens[end]?.text === "-" || tokens[end]?.text === "+") end++;
    let depth = 0;
    do {
      const text = tokens[end]?.text;
      if (text === "(" || text === "[" || text === "{") depth++;
      else if (text === ")" || text === "]" || text === "}") depth--;
      end++;
    } while (depth > 0 && end < tokens.length);
    const value = tokens
      .slice(index + 2, end)
      .map((token) => (token.kind === "string" ? stringValue(token) : token.text));
    pairs.push([name, value.join("")]);
    if (tokens[end]?.text !== ",") break;
    index = end + 1;
  }
  return pairs;
}

/** Whether the identifier at `index` follows a dot (`t.system`, `x.default`): a column or a field, no database. */
function isColumnOf(tokens: readonly Token[], index: number): boolean {
  return tokens[index - 1]?.text === "." && index >= 2 && identifierName(tokens[index - 2]!) !== undefined;
}

/** Whether `node` is an argument of a function that only parses it. */
const isParsedOnly = (parent: AstNode | undefined, grandparent: AstNode | undefined) =>
  parent?.type === "ExpressionList" &&
  grandparent?.type === "Function" &&
  PARSE_ONLY.test(functionName(grandparent).toLowerCase());

function walk(node: AstNode, parent: AstNode | undefined, scope: Scope, grandparent?: AstNode): void {
  if (node.type === "Function") checkFunction(node, parent, scope);
  else if (
    node.label.startsWith("Literal '") &&
    !isParsedOnly(parent, grandparent) &&
    holdsColumnExpression(literalValue(node))
  ) {
    // wherever a string reaches the engine as a structure, its column expressions are SQL the walk does not see
    throw denied("A string that defines columns with expressions is not allowed here");
  }
  // a table's own settings (CREATE TABLE … SETTINGS, ALTER TABLE … MODIFY SETTING; their names are checked on the
  // print) and EXPLAIN's options are no query settings; a query's own SETTINGS clause is checked name by name on the
  // print (checkTokens), as URL settings are
  else if (
    node.type === "Set" &&
    !["Storage", "Explain", "SelectQuery", "InsertQuery"].includes(parent?.type ?? "") &&
    !parent?.label.startsWith("AlterCommand MODIFY_SETTING")
  ) {
    throw readonly("Settings cannot be changed in a query here; pass them as URL parameters");
  } else if (ALTER_COMMANDS_REFUSED.test(node.label)) {
    throw denied(`${node.label.slice("AlterCommand ".length)} is not allowed here`);
  }
  for (const child of node.children) walk(child, node, scope, parent);
}

function checkFunction(node: AstNode, parent: AstNode | undefined, scope: Scope): void {
  const name = functionName(node);
  const lower = name.toLowerCase();
  const args = node.children.find((child) => child.type === "ExpressionList")?.children ?? [];
  if (parent?.type === "TableExpression") {
    if (!TABLE_FUNCTIONS.has(lower)) throw denied(`Table function ${name} is not allowed here`);
    if (lower === "merge" && args.length > 1) checkNamesDatabase(args[0]!, name, scope);
    checkStructure(name, lower, args);
  } else if (parent?.type === "InsertQuery" || parent?.type === "CreateQuery") {
    throw denied(`Table function ${name} is not allowed here`);
  } else if (parent?.type === "Storage" && parent.children.find((child) => child.type === "Function") === node) {
    if (!ENGINES.test(name)) throw denied(`Engine ${name} is not allowed here`);
    if (name === "Merge" && args[0]) checkNamesDatabase(args[0], name, scope);
    if (name === "EmbeddedRocksDB" && args.length > 1) throw denied("EmbeddedRocksDB takes no directory here");
  } else if (FUNCTIONS_REFUSED.test(lower)) {
    throw denied(`Function ${name} is not allowed here`);
  } else if (NAMING_FUNCTIONS.test(lower)) {
    // the names must be written out, as strings: a computed one (concat('_lo', 'cal')) is not checked
    if (args.slice(0, lower === "hascolumnintable" ? 2 : 1).some((arg) => !arg.label.startsWith("Literal '"))) {
      throw denied(`Function ${name} takes its database and table as string literals here`);
    }
    for (const arg of args.filter((child) => child.type === "Literal")) {
      const value = literalValue(arg);
      const database = value.includes(".") ? value.slice(0, value.indexOf(".")) : value;
      if (scope.otherDatabases.has(database) || database === "system") {
        throw denied(`Function ${name} may only name tables of ${scope.database} here`);
      }
    }
  }
}

/**
 * A table function's structure (`a String, b UInt8`) is SQL in a string, which the walk of the statement does not
 * see, and the engine evaluates its column expressions (`DEFAULT file(…)`). So a structure must be a string literal
 * as written (not `concat(…)`, a cast or an identifier, which the engine folds into one) and hold no expressions.
 */
function checkStructure(name: string, lower: string, args: readonly AstNode[]): void {
  const index =
    lower === "format" && args.length === 3
      ? 1
      : lower === "generaterandom" || lower === "null" || (lower === "values" && args.length > 1)
        ? 0
        : undefined;
  const arg = index === undefined ? undefined : args[index];
  if (arg === undefined) return;
  // values() takes its rows alone too: a first argument that is a row (a tuple, an array, a number) is no structure
  if (lower === "values" && (/^Function (tuple|array)\b/.test(arg.label) || /^Literal [^']/.test(arg.label))) return;
  if (!arg.label.startsWith("Literal '")) {
    throw denied(`The structure of ${name} must be a string literal here`);
  }
  if (hasColumnExpressions(literalValue(arg))) {
    throw denied(`Column expressions in the structure of ${name} are not allowed here`);
  }
}

/** Whether a structure holds expressions the engine evaluates. */
function hasColumnExpressions(structure: string): boolean {
  return significant(structure).some(
    (token) => token.kind === "word" && COLUMN_EXPRESSIONS.has(token.text.toUpperCase()),
  );
}

/**
 * Whether a string reads as columns with an expression: a column-expression keyword, then a function call. A net
 * under `checkStructure` for functions not known to take a structure (a data string rarely reads so).
 */
function holdsColumnExpression(text: string): boolean {
  if (!/\b(default|materialized|alias|ephemeral)\b/i.test(text)) return false;
  const tokens = significant(text);
  const keyword = tokens.findIndex(
    (token) => token.kind === "word" && COLUMN_EXPRESSIONS.has(token.text.toUpperCase()),
  );
  return (
    keyword >= 0 &&
    tokens.some((token, index) => index > keyword && token.kind === "word" && tokens[index + 1]?.text === "(")
  );
}

/** A `Merge` or `merge()` argument that names a database: it must be the service's. */
function checkNamesDatabase(node: AstNode, name: string, scope: Scope): void {
  const named =
    node.type === "Identifier"
      ? nodeIdentifier(node)
      : node.type === "Literal"
        ? literalValue(node)
        : node.type === "Function" && functionName(node) === "currentDatabase"
          ? scope.database
          : undefined;
  if (named !== scope.database) throw denied(`${name} may only name tables of ${scope.database} here`);
}

/**
 * Whether a write names a system database as its target: its label (`CreateQuery system t`, `DropQuery system`) or
 * its identifiers (`InsertQuery` → `Identifier system`, `Rename`). The port's own tables stand in for two system
 * tables, which must not be written through them either.
 */
function writesSystem(ast: AstNode): boolean {
  const names = [
    ...ast.label.split(" ").slice(1),
    ...ast.children.filter((child) => child.type === "Identifier").map((child) => nodeIdentifier(child).split(".")[0]!),
  ];
  return names.some((name) => SYSTEM_DATABASES.has(name));
}

/**
 * With writes allowed, a database may be created as an Atomic one (the engine's default), and nothing else; with a
 * comment and a `FORMAT` clause (for the answer, which is empty), as a server takes it.
 */
function checkCreateDatabase(line: string, scope: Scope): void {
  const tokens = significant(line);
  // a string's text does not matter here, only that it is one
  const words = tokens.map((token) => (token.kind === "string" ? "'…'" : token.text.toUpperCase()));
  const named = words[2] === "IF" ? tokens[5] : tokens[2];
  const name = named && identifierName(named);
  let rest = words.slice(words[2] === "IF" ? 6 : 3);
  if (rest.at(-2) === "FORMAT" && tokens.at(-1)?.kind === "word") rest = rest.slice(0, -2);
  if (rest.at(-2) === "COMMENT" && rest.at(-1) === "'…'") rest = rest.slice(0, -2);
  if (name === undefined || !(rest.length === 0 || rest.join(" ") === "ENGINE = ATOMIC")) {
    throw denied("Only an Atomic database can be created here");
  }
  checkUsable(name, scope);
}

const readonly = (message: string) => QueryError.of("READONLY", message);
const denied = (message: string) => QueryError.of("ACCESS_DENIED", message);
