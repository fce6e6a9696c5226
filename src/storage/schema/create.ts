import type { ClickHouse } from "../clickhouse";
import { literal, quoteIdentifier } from "../sql";
import {
  checkColumns,
  checkEngines,
  checkViews,
  type Found,
  type RepairObserver,
  type ViewObserver,
  warnRepair,
  warnView,
} from "./check";
import { clusterNodes } from "./cluster";
import { personPropertyKeyOf, propertyKeyOf } from "./properties";
import { type RebuildObserver, refillSessions, setAsideSessions, warnRebuild } from "./rebuild";
import { onClusterClause, type SchemaOptions, schemaObjects } from "./tables";

/**
 * Creates the database, tables and views where they are missing, once what exists has the engines this layout
 * needs, then checks the columns, and the views' definitions. Safe to run at every start; on a cluster it refuses a
 * cluster the server does not define before any DDL, and sends no DDL when everything is as this version makes it,
 * so an instance starts while a node is down. On one server a `sessions` of an older layout is made again from
 * events (rebuild.ts).
 */
export async function createSchema(
  db: ClickHouse,
  onRepair: RepairObserver = warnRepair,
  options: SchemaOptions = {},
  onRebuild: RebuildObserver = warnRebuild,
  onView: ViewObserver = warnView,
): Promise<void> {
  const { cluster } = db;
  if (cluster !== undefined) await clusterNodes(db, cluster);
  const onCluster = onClusterClause(cluster);
  const databases = await db.rows(`SELECT name FROM system.databases WHERE name = ${literal(db.database)}`);
  if (databases.length === 0)
    await db.command(`CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(db.database)}${onCluster}`);
  // a property column of a key no longer listed stays, and reads its key from the one tuple as the others do
  const kept = await materializedColumns(db);
  const keys = (listed: readonly string[] | undefined, keyOf: (column: string) => string | undefined) => [
    ...(listed ?? []),
    ...kept.map(keyOf).filter((key) => key !== undefined),
  ];
  const objects = schemaObjects(db.database, cluster, {
    ...options,
    materializedProperties: keys(options.materializedProperties, propertyKeyOf),
    materializedPersonProperties: keys(options.materializedPersonProperties, personPropertyKeyOf),
  });
  const found = await tableEngines(db);
  checkEngines(db, objects, found);
  const rebuild = await setAsideSessions(db);
  // without the view and the table set aside, if they were
  const engines = rebuild === undefined ? found : await tableEngines(db);
  // the views after the columns they read: one made here reads a column the check may yet add
  const tables = objects.filter((object) => !object.replace);
  const views = objects.filter((object) => object.replace);
  for (const table of tables) if (!engines.has(table.name)) await db.command(table.create);
  await checkColumns(db, tables, onCluster, onRepair);
  for (const view of views) if (!engines.has(view.name)) await db.command(view.create);
  await checkViews(db, views, engines, onRepair, onView);
  if (rebuild !== undefined) await refillSessions(db, rebuild, onRebuild);
}

/** The names of the materialized columns `events` has (properties.ts). */
async function materializedColumns(db: ClickHouse): Promise<string[]> {
  const columns = await db.rows<{ name: string }>(
    `SELECT name FROM system.columns WHERE database = ${literal(db.database)} AND table = 'events'
      AND default_kind = 'MATERIALIZED'`,
  );
  return columns.map((column) => column.name);
}

/** The engine and comment of each table and view of the database, by name. */
async function tableEngines(db: ClickHouse): Promise<Map<string, Found>> {
  const tables = await db.rows<{ name: string; engine: string; comment: string }>(
    `SELECT name, engine, comment FROM system.tables WHERE database = ${literal(db.database)}`,
  );
  return new Map(tables.map(({ name, engine, comment }) => [name, { engine, comment }]));
}
