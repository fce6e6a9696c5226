import type { Session } from "chdb";
import { literal } from "../storage";
import { execute, rows } from "./calls";

/**
 * A mutation (`ALTER … UPDATE` or `DELETE`, `MATERIALIZE …`, `DROP COLUMN`, a new TTL's, a lightweight `DELETE`'s)
 * runs in the engine's background pool, not in its statement: by default the statement returns at once and the
 * mutation goes on with no client, outside every limit of the port and out of `system.processes`, and one that
 * fails is retried for ever. On the port a statement waits for its mutations (the session's `mutations_sync`,
 * `alter_sync` and `lightweight_deletes_sync`, which a client may not set to 0: settings.ts), so they run within its
 * time limit; and when it fails (its time limit, an error, a mutation that fails) the port kills the mutations of
 * its table that it did not find unfinished before it. See docs/query.md#what-a-writable-port-refuses.
 */

/** The table a statement that may start mutations changes. */
export interface MutationTarget {
  readonly database: string;
  readonly table: string;
}

/** Statements that may start mutations. */
export const MUTATING = new Set(["AlterQuery", "DeleteQuery", "UpdateQuery"]);

/**
 * Runs a statement that may start mutations on `target`. `open` gives a session of the port's own, for its looks at
 * `system.mutations` and the kill: none of the client's settings (a filter on the table) applies to them.
 */
export async function boundMutations<T>(
  target: MutationTarget,
  open: () => Session,
  run: () => Promise<T>,
): Promise<T> {
  const own = open();
  try {
    const unfinished = `database = ${literal(target.database)} AND table = ${literal(target.table)} AND NOT is_done`;
    const before = (await rows(own, `SELECT mutation_id FROM system.mutations WHERE ${unfinished}`)).map(([id]) => id!);
    try {
      return await run();
    } catch (error) {
      const started = before.length === 0 ? "" : ` AND mutation_id NOT IN (${before.map(literal).join(", ")})`;
      // the statement's error is the answer; a kill that fails leaves the mutation to the engine, as before
      await execute(own, `KILL MUTATION WHERE ${unfinished}${started} SYNC`).catch(() => {});
      throw error;
    }
  } finally {
    own.close();
  }
}
