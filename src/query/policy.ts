import { QueryError } from "./errors";

/**
 * What a query on the port may do, judged on the engine's own parse of it (`EXPLAIN AST` of the statement as
 * `formatQuery` printed it), never on the client's text. The engine runs each read-only query with
 * `readonly = 1`, which already refuses writes, DDL, changed settings and the table functions that reach files,
 * URLs, other servers or programs; this refuses what `readonly` lets through (the scalar `file()`, `INTO OUTFILE`,
 * `KILL`), and, for an operator who allows writes (`QUERY_READONLY=0`), everything that would reach beyond the
 * engine's own tables. The reasons are in docs/query.md#what-the-port-refuses.
 */

/** Whether the query may change data (`QUERY_READONLY=0`, on a POST). */
export type Access = "read" | "write";

/** One node of `EXPLAIN AST`: its type (the label's first word), its label, and its children. */
export interface AstNode {
  readonly type: string;
  readonly label: string;
  readonly children: AstNode[];
}

/** Parses `EXPLAIN AST` output: one node a line, children indented one space deeper than their parent. */
export function parseAst(text: string): AstNode {
  const root: AstNode = { type: "", label: "", children: [] };
  const stack: { node: AstNode; depth: number }[] = [{ node: root, depth: -1 }];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const depth = line.length - line.trimStart().length;
    const label = line.trim();
    const node: AstNode = { type: label.split(" ", 1)[0]!, label, children: [] };
    while (stack.at(-1)!.depth >= depth) stack.pop();
    stack.at(-1)!.node.children.push(node);
    stack.push({ node, depth });
  }
  if (root.children.length !== 1) throw QueryError.of("SYNTAX_ERROR", "Expected exactly one statement");
  return root.children[0]!;
}

/** The function a `Function <name> [(alias …)] [(children N)]` node calls. */
export function functionName(node: AstNode): string {
  return node.label.slice("Function ".length).replace(/ \((alias|children) [\s\S]*$/, "");
}

/** Statements that only read. */
const READS = new Set([
  "SelectWithUnionQuery",
  "SelectIntersectExceptQuery",
  "ShowTables",
  "ShowColumns",
  "ShowIndexes",
  "ShowFunctions",
  "ShowEngines",
  "ShowProcesslistQuery",
  "ShowCreateTableQuery",
  "ShowCreateViewQuery",
  "ShowCreateDatabaseQuery",
  "ShowCreateDictionaryQuery",
  "ShowSettingQuery",
  "ExistsTableQuery",
  "ExistsDatabaseQuery",
  "ExistsViewQuery",
  "ExistsDictionaryQuery",
  "DescribeQuery",
  "CheckQuery",
  "UseQuery",
  "Explain",
]);

/** Statements that change tables, for an operator who allows writes. */
const WRITES = new Set([
  "InsertQuery",
  "CreateQuery",
  "DropQuery",
  "TruncateQuery",
  "AlterQuery",
  "DeleteQuery",
  "UpdateQuery",
  "Rename",
  "OptimizeQuery",
]);

/**
 * Table functions that read nothing but the engine's own tables or their arguments. Every other one (`file`, `url`,
 * `s3`, `remote`, `mysql`, `postgresql`, `executable`, `input`, `dictionary`, …) reaches outside or needs a source.
 */
const TABLE_FUNCTIONS = new Set([
  "numbers",
  "numbers_mt",
  "zeros",
  "zeros_mt",
  "values",
  "generaterandom",
  "generate_series",
  "generateseries",
  "null",
  "view",
  "merge",
  "format",
]);

/** Table and database engines that keep their data in the engine's own directory. */
const ENGINES =
  /^(?:(?:Replacing|Summing|Aggregating|Collapsing|VersionedCollapsing|Graphite|Coalescing)?MergeTree|Memory|Log|TinyLog|StripeLog|Null|Set|Join|Buffer|Merge|EmbeddedRocksDB|GenerateRandom|Atomic|Ordinary)$/;

/** Scalar functions that read files (`file`, CatBoost models) or dictionaries, whose sources are files or servers. */
const FUNCTIONS_REFUSED = /^(?:file|catboostevaluate|modelevaluate|dict.*)$/;

/** ALTER commands that write outside the table (backups in `shadow/`) or fetch from elsewhere. */
const ALTER_COMMANDS_REFUSED = /^AlterCommand (?:FREEZE|UNFREEZE|FETCH)/;

/**
 * Checks a statement. `formatted` is the engine's multi-line rendering of it, where a clause begins its own line
 * and string literals are escaped onto one, so `INTO OUTFILE` cannot hide in a literal.
 */
export function checkStatement(ast: AstNode, formatted: string, access: Access): void {
  if (!READS.has(ast.type) && !(access === "write" && WRITES.has(ast.type))) {
    throw readonly(access === "read" ? "Cannot execute query in readonly mode" : `${ast.type} is not allowed here`);
  }
  if (/^INTO OUTFILE /m.test(formatted)) throw denied("INTO OUTFILE writes files on the server");
  if (ast.type === "CreateQuery" && ast.children.some((child) => child.type === "Dictionary")) {
    throw denied("dictionaries read from files, URLs or other servers");
  }
  if (ast.type === "Explain") {
    const explained = ast.children.find((child) => child.type !== "Set");
    if (explained) checkStatement(explained, formatted, access);
  }
  walk(ast, undefined);
}

function walk(node: AstNode, parent: AstNode | undefined): void {
  if (node.type === "Function") checkFunction(node, parent);
  // a table's own settings (CREATE TABLE … SETTINGS) and EXPLAIN's options are no query settings
  else if (node.type === "Set" && parent?.type !== "Storage" && parent?.type !== "Explain") {
    throw readonly("Settings cannot be changed in a query here; pass them as URL parameters");
  } else if (ALTER_COMMANDS_REFUSED.test(node.label)) {
    throw denied(`${node.label.slice("AlterCommand ".length)} is not allowed here`);
  }
  node.children.forEach((child) => {
    walk(child, node);
  });
}

function checkFunction(node: AstNode, parent: AstNode | undefined): void {
  const name = functionName(node);
  const lower = name.toLowerCase();
  if (parent?.type === "TableExpression") {
    if (!TABLE_FUNCTIONS.has(lower)) throw denied(`Table function ${name} is not allowed here`);
  } else if (parent?.type === "InsertQuery" || parent?.type === "CreateQuery") {
    throw denied(`Table function ${name} is not allowed here`);
  } else if (parent?.type === "Storage" && parent.children.find((child) => child.type === "Function") === node) {
    if (!ENGINES.test(name)) throw denied(`Engine ${name} is not allowed here`);
  } else if (FUNCTIONS_REFUSED.test(lower)) {
    throw denied(`Function ${name} is not allowed here`);
  }
}

const readonly = (message: string) => QueryError.of("READONLY", message);
const denied = (message: string) => QueryError.of("ACCESS_DENIED", message);
