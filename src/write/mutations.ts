import { type ClickHouse, literal } from "../storage";

/** A mutation registered: its table, and a value its statement names, by which `system.mutations` shows it. */
export interface Mutation {
  readonly table: string;
  readonly marker: string;
}

/** How often `mutated` looks again. */
const POLL_MS = 100;

/**
 * Waits until the mutations of `table` whose statements name `marker` are done, on every part (as `mutations_sync`
 * would have), of every replica on a cluster. One that the engine fails to apply is an error: the engine goes on
 * retrying it.
 */
export async function mutated(db: ClickHouse, { table, marker }: Mutation): Promise<void> {
  const mutations =
    db.cluster === undefined ? "system.mutations" : `clusterAllReplicas(${literal(db.cluster)}, system.mutations)`;
  for (;;) {
    const [row] = await db.rows<{ found: number | string; done: number | string; failure: string }>(
      `SELECT count() AS found, min(is_done) AS done, any(latest_fail_reason) AS failure FROM ${mutations}
       WHERE database = ${literal(db.database)} AND table = ${literal(table)} AND position(command, ${literal(marker)}) > 0`,
    );
    // registered and so listed until 100 later ones are done (`finished_mutations_to_keep`): it cannot be missing
    if (row === undefined || Number(row.found) === 0) {
      throw new Error(`the mutation of ${table} is not in system.mutations`);
    }
    if (Number(row.done) === 1) return;
    if (row.failure !== "") throw new Error(`the engine failed to mutate ${table}: ${row.failure}`);
    await Bun.sleep(POLL_MS);
  }
}
