import {
  type ClickHouse,
  type ClickHouseSettings,
  type Consistency,
  QUORUM_TIMEOUT_MS,
  type Replication,
} from "../clickhouse";
import { literal } from "../sql";
import { SchemaError } from "./check";
import { TABLES } from "./tables";

/**
 * How many nodes `cluster` has, as the server's `remote_servers` defines it; a cluster it does not define is a
 * `SchemaError`, before any DDL.
 */
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
 * How the tables are replicated where `db` writes, and so what each insert carries (docs/scale-out.md#clusters):
 * - Replicated identity tables are written with a majority quorum (`insert_quorum = 'auto'`, in parallel, since
 *   several instances write at once), so an acknowledged insert survives the loss of a minority of replicas, and a
 *   minority down does not stop ingest. A flush then reads them only after its node has caught up with the log
 *   (`ClickHouse.catchUp`): with a quorum of every node instead, one node down stopped every instance.
 * - Inserts through a `Distributed` table go to the shards before the insert returns (not queued on the node that
 *   took them), so a 200 means the rows are in their shard.
 * - Shared engines (ClickHouse Cloud) take no quorum; their reads are made sequentially consistent instead.
 */
export async function consistencyOf(db: ClickHouse): Promise<Consistency> {
  const replication = db.cluster === undefined ? await replicationOf(db) : "replicated";
  const quorum: ClickHouseSettings =
    replication === "replicated"
      ? { insert_quorum: "auto", insert_quorum_parallel: 1, insert_quorum_timeout: QUORUM_TIMEOUT_MS }
      : {};
  const insertSettings = Object.fromEntries(
    TABLES.map((spec) => [
      spec.name,
      spec.placement.kind === "everywhere"
        ? quorum
        : db.cluster === undefined
          ? {}
          : { distributed_foreground_insert: 1 },
    ]),
  );
  return { replication, insertSettings };
}

/** On one server: the engines the identity tables were made with (a `Replicated` database's, or Cloud's). */
async function replicationOf(db: ClickHouse): Promise<Replication> {
  const identity = TABLES.filter((spec) => spec.placement.kind === "everywhere").map((spec) => literal(spec.name));
  const rows = await db.rows<{ engine: string }>(
    `SELECT engine FROM system.tables WHERE database = ${literal(db.database)} AND name IN (${identity.join(", ")})`,
  );
  if (rows.some((row) => row.engine.startsWith("Shared"))) return "shared";
  if (rows.some((row) => row.engine.startsWith("Replicated"))) return "replicated";
  return "none";
}
