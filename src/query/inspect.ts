import type { Session } from "chdb";
import { literal } from "../storage";
import { type AstNode, nodeIdentifier, parseAst } from "./ast";
import { bindParams } from "./bind";
import { QueryError } from "./errors";
import { MUTATING, type MutationTarget } from "./mutations";
import { type Access, checkStatement, checkUsable, scopeOf } from "./policy";
import { tokens, unescapeText } from "./tokens";
import { throughPortViews } from "./views";

/** What `inspect` judges. */
interface InspectRequest {
  readonly text: string;
  readonly params: Readonly<Record<string, string>>;
  readonly access: Access;
  /** The service's database. */
  readonly database: string;
  /** Refuses a setting of the statement's `SETTINGS` clause. */
  readonly checkSetting: (name: string, value: string) => void;
  /** Whether a name is a query's setting. */
  readonly isQuerySetting: (name: string) => boolean;
}

/** A statement the policy passed, as it runs. */
export interface Inspected {
  /** Its type, as the engine parsed it (`SelectWithUnionQuery`, `InsertQuery`, …). */
  readonly statement: string;
  /** The statement as the engine formatted it, read through the port's views: what runs, and nothing else. */
  readonly formatted: string;
  /** The same on one line. */
  readonly line: string;
  /** Its FORMAT clause. */
  readonly format: string | undefined;
  /** The table whose mutations it may start (mutations.ts). */
  readonly target: MutationTarget | undefined;
}

/**
 * The client's text, with its `param_` values bound into it, is parsed and printed again by the engine, which
 * refuses more than one statement (`formatQuery`); the policy judges the engine's syntax tree of that print and
 * its tokens; the print is what runs: what was judged is what runs. An identifier with a line break is refused,
 * because `EXPLAIN AST` prints one node a line.
 */
export async function inspect(session: Session, request: InspectRequest): Promise<Inspected> {
  const printed = await print(session, bindParams(request.text, request.params));
  const { line, formatted } = printed;
  const scope = scopeOf(request.access, request.database, printed, request.checkSetting, request.isQuerySetting);
  if (hasLineBreakInIdentifier(line)) {
    throw QueryError.of("SYNTAX_ERROR", "Identifiers with line breaks are not accepted here");
  }
  const ast = parseAst((await session.queryAsync(`EXPLAIN AST ${formatted}`, { format: "TSVRaw" })).text());
  checkStatement(ast, formatted, line, scope);
  const format = ast.type === "InsertQuery" ? undefined : /^FORMAT (\S+)$/m.exec(formatted)?.[1];
  return {
    statement: ast.type,
    formatted: throughPortViews(formatted),
    line: throughPortViews(line),
    format,
    target: mutationTarget(ast, printed.current),
  };
}

/** The table an ALTER, DELETE or UPDATE names: its `Identifier` children, the current database if it names none. */
function mutationTarget(ast: AstNode, current: string): MutationTarget | undefined {
  if (!MUTATING.has(ast.type)) return undefined;
  const names = ast.children.filter((child) => child.type === "Identifier").map(nodeIdentifier);
  const [database, table] = names.length >= 2 ? names : [current, names[0]];
  return database === undefined || table === undefined ? undefined : { database, table };
}

/**
 * Whether a quoted identifier in the single-line print holds a line break. The print escapes it (as it does in
 * string literals), but `EXPLAIN AST` prints identifiers and aliases as they are, and one would start a line that
 * reads as a node of its own.
 */
function hasLineBreakInIdentifier(line: string): boolean {
  for (const token of tokens(line)) {
    if (token.kind === "quoted" && /[\r\n]/.test(unescapeText(token.text.slice(1, -1)))) return true;
  }
  return /[\r\n]/.test(line);
}

/** The engine's print of a statement, and the databases it has now (name and engine). */
interface Printed {
  /** On one line. */
  readonly line: string;
  /** Formatted: a clause a line. */
  readonly formatted: string;
  readonly databases: [string, string][];
  /** The system tables the engine has. */
  readonly systemTables: string[];
  /** The session's current database. */
  readonly current: string;
}

async function print(session: Session, text: string): Promise<Printed> {
  const quoted = literal(text);
  const printed = await session.queryAsync(
    `SELECT formatQuerySingleLine(${quoted}) AS line, formatQuery(${quoted}) AS formatted, ` +
      "(SELECT groupArray((name, engine)) FROM system.databases) AS databases, " +
      "(SELECT groupArray(name) FROM system.tables WHERE database = 'system') AS systemTables, " +
      "currentDatabase() AS current",
    { format: "JSONEachRow" },
  );
  return JSON.parse(printed.text()) as Printed;
}

/** Refuses a database a request may not make its current one (the `database` parameter). */
export async function checkDatabase(session: Session, name: string, access: Access, database: string): Promise<void> {
  const none = () => true;
  checkUsable(
    name,
    scopeOf(access, database, await print(session, "SELECT 1"), () => {}, none),
  );
}
