import { schemaObjects } from "../storage";
import { type AstNode, nodeIdentifier } from "./ast";
import { QueryError } from "./errors";
import { identifierName, significant } from "./tokens";

/**
 * What a port that takes writes refuses besides what the policy refuses in both modes
 * (docs/query.md#what-a-writable-port-refuses):
 * - work the engine would do later, with no client waiting and outside every limit of the port: a refreshable
 *   materialized view runs its query on a timer (on a port where `REFRESH EVERY 1 SECOND APPEND TO events AS SELECT
 *   * FROM events` doubled the events each second), a window view fires on a timer too. (Engines that pull or flush
 *   in the background, dictionaries and `SYSTEM` are refused by the policy's lists; mutations are bounded where they
 *   run, in mutations.ts.)
 * - changes to the service's own tables and views in its database, which the write path inserts into and reads on
 *   every flush: a constraint, a column changed, a TTL, a materialized view reading them, a drop or a rename made
 *   every `POST /batch/` fail with a 5xx that SDKs retry for ever. Data may still change: inserts, deletes, updates,
 *   partitions dropped or moved, truncation.
 */

/** What the checks need of the policy's scope. */
interface WritableScope {
  /** The service's database. */
  readonly database: string;
  /** The database an unqualified name is in: the session's current one. */
  readonly currentDatabase: string;
}

/**
 * ALTER commands a service's table takes: they change rows (mutations, bounded in mutations.ts; partitions) or
 * comments, or take away what an insert must satisfy (a constraint, an index, a projection or a TTL someone added:
 * how an operator undoes one made before the port refused them), never add to it. `DROP_PARTITION` is also `DETACH
 * PARTITION` and `DROP PART`; `REPLACE_PARTITION` is also `ATTACH PARTITION … FROM`; `DROP_INDEX` is also `CLEAR
 * INDEX`.
 */
const DATA_COMMANDS = new Set([
  "DELETE",
  "UPDATE",
  "APPLY_DELETED_MASK",
  "DROP_PARTITION",
  "DROP_DETACHED_PARTITION",
  "ATTACH_PARTITION",
  "REPLACE_PARTITION",
  "MOVE_PARTITION",
  "MODIFY_COMMENT",
  "COMMENT_COLUMN",
  "DROP_CONSTRAINT",
  "DROP_INDEX",
  "DROP_PROJECTION",
  "DROP_STATISTICS",
  "REMOVE_TTL",
]);

/**
 * Retention's own DDL (`EVENTS_RETENTION_DAYS`, src/storage/retention.ts), as an instance that shares the service's
 * database through the port sends it at its start: a TTL of whole days on `events` or `sessions`, or none, and the
 * two settings it needs, as the engine prints them (each command in brackets). It drops old rows; it asks nothing of
 * an insert.
 */
const RETENTION =
  /^ALTER TABLE (?:[\w.]|`(?:[^`\\]|\\.)*`)+ \((?:MODIFY TTL toDate32\((?:timestamp|max_timestamp)\) \+ toIntervalDay\(\d+\)|REMOVE TTL|MODIFY SETTING (?:materialize_ttl_recalculate_only|ttl_only_drop_parts) = [01](?:, (?:materialize_ttl_recalculate_only|ttl_only_drop_parts) = [01])?)\)$/;
const isRetention = (name: string, line: string) => (name === "events" || name === "sessions") && RETENTION.test(line);

/** Refuses what a writable port may not do (see above); `line` is the statement's single-line print. */
export function checkWritable(ast: AstNode, line: string, scope: WritableScope): void {
  if (someNode(ast, (node) => node.label.startsWith("Refresh strategy definition"))) {
    throw denied(
      "Refreshable materialized views are not allowed here: they run on a timer, with no client, outside the port's limits",
    );
  }
  if (/^(?:CREATE (?:OR REPLACE )?|REPLACE )WINDOW VIEW /.test(line)) {
    throw denied("Window views are not allowed here: they fire on a timer, with no client, outside the port's limits");
  }
  const owned = (database: string | undefined, name: string) =>
    (database ?? scope.currentDatabase) === scope.database && serviceObjects(scope.database).has(name);
  const readsOwned = () => someNode(ast, (node) => node.type === "TableIdentifier" && namesOwned(tableLabel(node)));
  // a table identifier's label joins database and name with a dot, unquoted: compared whole, never split
  const namesOwned = (label: string) =>
    [...serviceObjects(scope.database)].some(
      (name) => label === `${scope.database}.${name}` || (label === name && scope.currentDatabase === scope.database),
    );
  const refuse = (what: string, name: string) =>
    denied(
      `${what} ${name} is not allowed here: it is the ingest service's own, and every ingest write needs it as it is`,
    );

  if (ast.type === "AlterQuery") {
    const [database, name] = target(ast);
    const commands = ast.children
      .find((child) => child.type === "ExpressionList")
      ?.children.map((command) => command.label.split(" ")[1] ?? "");
    const changed = commands?.find((command) => !DATA_COMMANDS.has(command));
    if (name !== undefined && owned(database, name) && changed !== undefined && !isRetention(name, line)) {
      throw refuse(`${changed} of`, name);
    }
    if (commands?.includes("MODIFY_QUERY") && readsOwned()) throw materializedView();
  } else if (ast.type === "DropQuery") {
    if (/^DROP DATABASE /.test(line)) {
      if (target(ast)[1] === scope.database) throw refuse("Dropping the database", scope.database);
    } else {
      const [database, name] = target(ast);
      if (name !== undefined && owned(database, name)) throw refuse("Dropping", name);
      const listed = ast.children.find((child) => child.type === "ExpressionList")?.children ?? [];
      const named = listed.find((node) => namesOwned(tableLabel(node)));
      if (named !== undefined) throw refuse("Dropping", tableLabel(named));
    }
  } else if (ast.type === "Rename") {
    for (const [database, name] of renamed(line)) {
      if (/^RENAME DATABASE /.test(line) ? name === scope.database : owned(database, name)) {
        throw refuse("Renaming", name);
      }
    }
  } else if (ast.type === "CreateQuery") {
    const [database, name] = target(ast);
    if (/^(?:CREATE OR REPLACE|REPLACE) /.test(line) && name !== undefined && owned(database, name)) {
      throw refuse("Replacing", name);
    }
    if (/^(?:CREATE (?:OR REPLACE )?|REPLACE )MATERIALIZED VIEW /.test(line) && readsOwned()) throw materializedView();
  }
}

/** A `TableIdentifier [database.]name [(alias …)]` node's name, with its database as printed. */
const tableLabel = (node: AstNode) => node.label.slice("TableIdentifier ".length).replace(/ \(alias [\s\S]*\)$/, "");

/** A statement's own database and name: its `Identifier` children (`[name]` alone when it names no database). */
function target(ast: AstNode): [string | undefined, string | undefined] {
  const names = ast.children.filter((child) => child.type === "Identifier").map(nodeIdentifier);
  return names.length >= 2 ? [names[0], names[1]] : [undefined, names[0]];
}

/**
 * Every name a RENAME or EXCHANGE print holds, as `[database, name]`: `a.b` is one, a lone identifier another
 * (with no database). Keywords come out as lone names too, which name nothing of the service's.
 */
function renamed(line: string): [string | undefined, string][] {
  const tokens = significant(line);
  const names: [string | undefined, string][] = [];
  for (let index = 0; index < tokens.length; index++) {
    const name = identifierName(tokens[index]!);
    if (name === undefined) continue;
    const next = tokens[index + 2];
    const table = tokens[index + 1]?.text === "." && next ? identifierName(next) : undefined;
    if (table !== undefined) {
      names.push([name, table]);
      index += 2;
    } else names.push([undefined, name]);
  }
  return names;
}

/** The names of the service's own tables and views in `database` (its schema), worked out once. */
const objectsByDatabase = new Map<string, ReadonlySet<string>>();
function serviceObjects(database: string): ReadonlySet<string> {
  let names = objectsByDatabase.get(database);
  if (names === undefined) {
    names = new Set(schemaObjects(database).map((object) => object.name));
    objectsByDatabase.set(database, names);
  }
  return names;
}

function someNode(node: AstNode, test: (node: AstNode) => boolean): boolean {
  return test(node) || node.children.some((child) => someNode(child, test));
}

const materializedView = () =>
  denied(
    "A materialized view reading the ingest service's own tables is not allowed here: it would run in every ingest write, and a failing one fails them all",
  );

const denied = (message: string) => QueryError.of("ACCESS_DENIED", message);
