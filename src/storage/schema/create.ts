import type { ClickHouse } from "../clickhouse";
import { literal, quoteIdentifier } from "../sql";
import { checkColumns, checkEngines, type RepairObserver, warnRepair } from "./check";
import { clusterNodes } from "./cluster";
import { propertyKeyOf } from "./properties";
import { type RebuildObserver, refillSessions, setAsideSessions, warnRebuild } from "./rebuild";
import { onClusterClause, type SchemaOptions, schemaObjects } from "./tables";

/**
 * Creates the database, tables and the sessions view where they are missing, once what exists has the engines
 * this layout needs, then checks the columns. Safe to run at every start; on a cluster it refuses a cluster the
 * server does not define before any DDL, and sends no DDL when nothing is missing, so an instance starts while a
 * node is down. On one server a `sessions` of an older layout is made again from events (rebuild.ts).
 */
export async function createSchema(
  db: ClickHouse,
  onRepair: RepairObserver = warnRepair,
  options: SchemaOptions = {},
  onRebuild: RebuildObserver = warnRebuild,
): Promise<void> {
  const { cluster } = db;
  if (cluster !== undefined) await clusterNodes(db, cluster);
  const onCluster = onClusterClause(cluster);
  const databases = await db.rows(`SELECT name FROM system.databases WHERE name = ${literal(db.database)}`);
  if (databases.length === 0)
    await db.command(`CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(db.database)}${onCluster}`);
  // a property column of a key no longer listed stays, and reads its key from the one tuple as the others do
  const kept = await propertyKeys(db);
  const keys = [...(options.materializedProperties ?? []), ...kept];
  const objects = schemaObjects(db.database, cluster, { ...options, materializedProperties: keys });
  const found = await tableEngines(db);
  checkEngines(db, objects, found);
  const rebuild = await setAsideSessions(db);
  // without the view and the table set aside, if they were
  const engines = rebuild === undefined ? found : await tableEngines(db);
  // the views after the columns they read: one made here reads a column the check may yet add
  for (const views of [false, true]) {
    const some = objects.filter((object) => object.replace === views);
    for (const object of some) if (!engines.has(object.name)) await db.command(object.create);
    await checkColumns(db, some, onCluster, onRepair);
  }
  if (rebuild !== undefined) await refillSessions(db, rebuild, onRebuild);
}

/** The keys of the property columns `events` has (properties.ts). */
async function propertyKeys(db: ClickHouse): Promise<string[]> {
  const columns = await db.rows<{ name: string }>(
    `SELECT name FROM system.columns WHERE database = ${literal(db.database)} AND table = 'events'
      AND default_kind = 'MATERIALIZED'`,
  );
  return columns.map((column) => propertyKeyOf(column.name)).filter((key) => key !== undefined);
}

/** The engine of each table and view of the database, by name. */
async function tableEngines(db: ClickHouse): Promise<Map<string, string>> {
  const tables = await db.rows<{ name: string; engine: string }>(
    `SELECT name, engine FROM system.tables WHERE database = ${literal(db.database)}`,
  );
  return new Map(tables.map((table) => [table.name, table.engine]));
}
