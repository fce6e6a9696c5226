import type { Session } from "chdb";
import { literal } from "../storage";
import { bindParams } from "./bind";
import { QueryError } from "./errors";
import { QUERY_LOG_TABLE } from "./log";
import { type Access, checkStatement, checkUsable, parseAst, scopeOf } from "./policy";
import { identifierName, tokens, unescapeText } from "./tokens";

/** What `inspect` judges. */
export interface InspectRequest {
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
}

/** The database of the port's own views over system tables (a Memory database: made anew at each start). */
const PORT_VIEWS_DATABASE = "_query_port";

/**
 * The port's own tables, by the system table each stands for, read in its place. `system.processes` shows every
 * query in the process: through the view a port user sees the port's queries only (the write path runs at another
 * priority), and the text of its own query only, since other clients' texts carry their bound parameter values.
 * `system.query_log`, which the engine does not keep, is the port's own log (log.ts). The catalogue tables are read
 * without the paths of the data directory.
 */
const PORT_TABLES: Readonly<Record<string, string>> = {
  processes: `CREATE OR REPLACE VIEW {database}.processes AS SELECT * REPLACE (if(query_id = queryID(), query, '') AS query) FROM system.processes WHERE Settings['priority'] = '2'`,
  query_log: QUERY_LOG_TABLE,
  // the catalogue without the paths of the data directory's files
  tables:
    "CREATE OR REPLACE VIEW {database}.tables AS SELECT * REPLACE ([] AS data_paths, '' AS metadata_path) FROM system.tables",
  databases: `CREATE OR REPLACE VIEW {database}.databases AS SELECT * REPLACE ('' AS data_path, '' AS metadata_path) FROM system.databases`,
  parts: "CREATE OR REPLACE VIEW {database}.parts AS SELECT * REPLACE ('' AS path) FROM system.parts",
  parts_columns:
    "CREATE OR REPLACE VIEW {database}.parts_columns AS SELECT * REPLACE ('' AS path) FROM system.parts_columns",
  projection_parts:
    "CREATE OR REPLACE VIEW {database}.projection_parts AS SELECT * REPLACE ('' AS path) FROM system.projection_parts",
  merges:
    "CREATE OR REPLACE VIEW {database}.merges AS SELECT * REPLACE ([] AS source_part_paths, '' AS result_part_path) FROM system.merges",
};

/** Creates the port's tables (at each start: a Memory database keeps nothing across restarts). */
export async function createPortTables(session: Session): Promise<void> {
  await session.queryAsync(`CREATE DATABASE IF NOT EXISTS ${PORT_VIEWS_DATABASE} ENGINE = Memory`);
  for (const create of Object.values(PORT_TABLES)) {
    await session.queryAsync(create.replace("{database}", PORT_VIEWS_DATABASE));
  }
}

/** The port's query log table, by its full name. */
export const QUERY_LOG = `${PORT_VIEWS_DATABASE}.query_log`;

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
  return { statement: ast.type, formatted: throughPortViews(formatted), line: throughPortViews(line), format };
}

/** `system.<table>` read through the port's own table for it, where it has one. */
function throughPortViews(text: string): string {
  const parts = [...tokens(text)];
  return parts
    .map((token, index) => {
      const table = parts[index + 2];
      return identifierName(token) === "system" &&
        parts[index + 1]?.text === "." &&
        table !== undefined &&
        Object.hasOwn(PORT_TABLES, identifierName(table)!) &&
        parts[index - 1]?.text !== "."
        ? PORT_VIEWS_DATABASE
        : token.text;
    })
    .join("");
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
}

async function print(session: Session, text: string): Promise<Printed> {
  const quoted = literal(text);
  const printed = await session.queryAsync(
    `SELECT formatQuerySingleLine(${quoted}) AS line, formatQuery(${quoted}) AS formatted, ` +
      "(SELECT groupArray((name, engine)) FROM system.databases) AS databases, " +
      "(SELECT groupArray(name) FROM system.tables WHERE database = 'system') AS systemTables",
    { format: "JSONEachRow" },
  );
  return JSON.parse(printed.text()) as Printed;
}

/** Refuses a database a request may not make its current one (the `database` parameter). */
export async function checkDatabase(session: Session, name: string, access: Access, database: string) {
  const none = () => true;
  checkUsable(
    name,
    scopeOf(access, database, await print(session, "SELECT 1"), () => {}, none),
  );
}
