import type { ClickHouse, ClickHouseSettings } from "../clickhouse";
import { literal } from "../sql";
import { SchemaError } from "./check";
import { TABLES } from "./tables";

/** How many nodes `cluster` has, as the server's `remote_servers` defines it; each holds the identity tables. */
export async function clusterNodes(db: ClickHouse, cluster: string): Promise<number> {
  const [row] = await db.rows<{ nodes: string | number }>(
    `SELECT count() AS nodes FROM system.clusters WHERE cluster = ${literal(cluster)}`,
  );
  const nodes = Number(row?.nodes ?? 0);
  if (nodes === 0) {
    throw new SchemaError(
      `CLICKHOUSE_CLUSTER is ${cluster}, but the server defines no such cluster (remote_servers): ` +
        "name one of system.clusters, or unset it for one server.",
    );
  }
  return nodes;
}

/**
 * What each insert needs on a cluster (docs/scale-out.md#clusters), by table:
 * - the identity tables are written with a quorum of every node, so once an insert is acknowledged any node reads
 *   it: the convergence argument needs a flush's read to see every fact acknowledged before it. Parallel quorum
 *   inserts stay on (several instances write at once). A node down fails identity inserts with a retryable 503
 *   until it is back; a replica that lags fails them after `insert_quorum_timeout` instead of the default 10 minutes;
 * - inserts through a `Distributed` table go to the shards before the insert returns (not queued on the node that
 *   took them), so a 200 means the rows are in their shard.
 */
export function insertSettings(
  cluster: string | undefined,
  nodes: number,
): Readonly<Record<string, ClickHouseSettings>> {
  if (cluster === undefined) return {};
  const quorum: ClickHouseSettings =
    nodes > 1 ? { insert_quorum: nodes, insert_quorum_parallel: 1, insert_quorum_timeout: 10_000 } : {};
  return Object.fromEntries(
    TABLES.map((spec) => [
      spec.name,
      spec.placement.kind === "everywhere" ? quorum : { distributed_foreground_insert: 1 },
    ]),
  );
}

/** What each insert into the schema's tables needs where `db` writes (nothing on one server). */
export async function clusterInsertSettings(db: ClickHouse): Promise<Readonly<Record<string, ClickHouseSettings>>> {
  const { cluster } = db;
  return insertSettings(cluster, cluster === undefined ? 1 : await clusterNodes(db, cluster));
}
