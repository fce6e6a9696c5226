import { OperatorError } from "../../config";
import type { ClickHouse } from "../clickhouse";
import { literal } from "../sql";
import { materializedColumn, type SchemaObject } from "./tables";

/** The database does not hold the tables this service writes, in a way it will not repair by itself. */
export class SchemaError extends OperatorError {
  override name = "SchemaError";
}

/** A table or view of the database, as `system.tables` lists it. */
export interface Found {
  readonly engine: string;
  readonly comment: string;
}

/**
 * Checks the engines of the tables and the views that exist (`found`, by name) before anything is created: a table
 * of another engine was made for the other layout (one server or a cluster), and is a `SchemaError`.
 */
export function checkEngines(
  db: ClickHouse,
  objects: readonly SchemaObject[],
  found: ReadonlyMap<string, Found>,
): void {
  const { cluster } = db;
  for (const object of objects) {
    const engine = found.get(object.name)?.engine;
    if (engine !== undefined && !sameEngine(engine, object.engine, cluster !== undefined)) {
      throw new SchemaError(
        `Table ${db.table(object.name)} is a ${engine}, but ${cluster === undefined ? "on one server" : `on cluster ${cluster}`} ` +
          `this service writes a ${object.engine} there: the database was made ${cluster === undefined ? "with" : "without"} ` +
          "CLICKHOUSE_CLUSTER. Set CLICKHOUSE_DATABASE to another database, or migrate the tables, and start again.",
      );
    }
  }
}

/**
 * Whether a table's engine is the one the layout needs. On one server the replicated and shared variants of the
 * engine do as well (a `Replicated` database, ClickHouse Cloud); on a cluster a table that is not replicated would
 * hold one node's rows only.
 */
function sameEngine(found: string, wanted: string, cluster: boolean): boolean {
  const family = (engine: string) => engine.replace(/^(Replicated|Shared)(?=\w*MergeTree$)/, "");
  if (found === wanted || found === `Shared${family(wanted)}`) return true;
  return !cluster && family(found) === wanted;
}

/** Told of each column the schema check added. */
export type RepairObserver = (table: string, column: string, type: string) => void;

export const warnRepair: RepairObserver = (table, column, type) =>
  console.warn(`Schema: ${table}.${column} is missing or narrower than ${type}; adding or widening it.`);

/** Told of each view made again at startup because another version made it (its definition is not this one's). */
export type ViewObserver = (view: string) => void;

export const warnView: ViewObserver = (view) =>
  console.warn(`Schema: ${view} was made by another version; made again with this version's definition.`);

/** A column as `system.columns` reports it: its type, and its default or materialized expression (or ''). */
interface FoundColumn {
  readonly type: string;
  readonly expression: string;
}

/** The columns of each table and view of the database: table → column → type and expression. */
async function columnsOf(db: ClickHouse): Promise<Map<string, Map<string, FoundColumn>>> {
  const rows = await db.rows<{ table: string; name: string; type: string; default_expression: string }>(
    `SELECT table, name, type, default_expression FROM system.columns WHERE database = ${literal(db.database)}`,
  );
  const tables = new Map<string, Map<string, FoundColumn>>();
  for (const row of rows) {
    const columns = tables.get(row.table) ?? tables.set(row.table, new Map()).get(row.table)!;
    columns.set(row.name, { type: row.type, expression: row.default_expression });
  }
  return tables;
}

/**
 * Checks the views that existed before this start (`found`; those made by it are as they should be): a view that
 * lacks a column, or whose definition is not this version's (its comment, `SchemaObject.definition`: another
 * version's, or none from a version before comments), is made again. A view holds no data, so nothing is lost; the
 * sessions view is made again beside its table, and an event inserted while both views exist counts once there.
 */
export async function checkViews(
  db: ClickHouse,
  views: readonly SchemaObject[],
  found: ReadonlyMap<string, Found>,
  onRepair: RepairObserver,
  onView: ViewObserver,
): Promise<void> {
  const tables = await columnsOf(db);
  for (const view of views) {
    const before = found.get(view.name);
    if (before === undefined) continue;
    const existing = tables.get(view.name) ?? new Map<string, FoundColumn>();
    const missing = Object.keys(view.columns ?? {}).filter((name) => !existing.has(name));
    for (const name of missing) onRepair(db.table(view.name), name, view.columns![name]!);
    const outdated = before.comment !== view.definition;
    if (outdated && missing.length === 0) onView(db.table(view.name));
    if (outdated || missing.length > 0) await db.command(view.create);
  }
}

/**
 * Checks the columns of the schema's tables: a missing column is added (safe: it only gets its default in old
 * rows), an enum that lacks values added since is widened (a change of metadata only: stored values keep their
 * numbers); a column of another type is a `SchemaError` naming the table, because writing on would silently lose
 * or mangle data. Extra columns are left alone. The views are `checkViews`'.
 */
export async function checkColumns(
  db: ClickHouse,
  objects: readonly SchemaObject[],
  onCluster: string,
  onRepair: RepairObserver,
): Promise<void> {
  const tables = await columnsOf(db);
  for (const object of objects) {
    const existing = tables.get(object.name) ?? new Map<string, FoundColumn>();
    for (const [name, type] of Object.entries(object.columns ?? {})) {
      const found = existing.get(name)?.type;
      if (found === undefined) {
        onRepair(db.table(object.name), name, type);
        await db.command(`ALTER TABLE ${db.table(object.name)}${onCluster} ADD COLUMN IF NOT EXISTS ${name} ${type}`);
      } else if (widens(found, type)) {
        onRepair(db.table(object.name), name, type);
        await db.command(`ALTER TABLE ${db.table(object.name)}${onCluster} MODIFY COLUMN ${name} ${type}`);
      } else if (found !== type) {
        throw new SchemaError(
          `Table ${db.table(object.name)} has column ${name} of type ${found}, but this service writes ${type}: ` +
            "migrate or drop the table (or set CLICKHOUSE_DATABASE to another database) and start again.",
        );
      }
    }
    // a part written before holds none: the engine computes it from the expression as a query reads the part
    for (const [name, column] of Object.entries(object.materialized ?? {})) {
      const expression = existing.get(name)?.expression;
      if (expression === column.expression) continue;
      // one of another expression (property columns of another set of keys) takes this one: a change of
      // metadata, stored values stay
      const change = expression === undefined ? "ADD COLUMN IF NOT EXISTS" : "MODIFY COLUMN";
      onRepair(db.table(object.name), name, column.type);
      await db.command(
        `ALTER TABLE ${db.table(object.name)}${onCluster} ${change} ${materializedColumn(name, column)}`,
      );
    }
  }
}

/** Whether `wanted` is the enum `found` with values added at its end. */
function widens(found: string, wanted: string): boolean {
  return /^Enum(8|16)\(/.test(found) && wanted.startsWith(`${found.slice(0, -1)}, `) && found.endsWith(")");
}
