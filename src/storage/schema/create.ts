import type { ClickHouse } from "../clickhouse";
import { literal, quoteIdentifier } from "../sql";
import { checkColumns, checkEngines, type RepairObserver, warnRepair } from "./check";
import { clusterNodes } from "./cluster";
import { onClusterClause, type SchemaOptions, schemaObjects } from "./tables";

/**
 * Creates the database, tables and the sessions view where they are missing, once what exists has the engines
 * this layout needs, then checks the columns. Safe to run at every start; on a cluster it refuses a cluster the
 * server does not define before any DDL, and sends no DDL when nothing is missing, so an instance starts while a
 * node is down.
 */
export async function createSchema(
  db: ClickHouse,
  onRepair: RepairObserver = warnRepair,
  options: SchemaOptions = {},
): Promise<void> {
  const { cluster } = db;
  if (cluster !== undefined) await clusterNodes(db, cluster);
  const onCluster = onClusterClause(cluster);
  const databases = await db.rows(`SELECT name FROM system.databases WHERE name = ${literal(db.database)}`);
  if (databases.length === 0)
    await db.command(`CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(db.database)}${onCluster}`);
  const tables = await db.rows<{ name: string; engine: string }>(
    `SELECT name, engine FROM system.tables WHERE database = ${literal(db.database)}`,
  );
  const engines = new Map(tables.map((table) => [table.name, table.engine]));
  const objects = schemaObjects(db.database, cluster, options);
  checkEngines(db, objects, engines);
  for (const object of objects) if (!engines.has(object.name)) await db.command(object.create);
  await checkColumns(db, objects, onCluster, onRepair);
}
