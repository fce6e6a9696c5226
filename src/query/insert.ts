import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Session } from "chdb";
import { literal } from "../storage";
import { QueryError } from "./errors";
import type { Inspected } from "./inspect";
import { finished, type RunningQuery } from "./running";

/**
 * An INSERT with its data: the data is written to a file of the port's own and the engine reads it from there
 * (`FROM INFILE`, which the policy refuses in a client's statement), so that any input format the engine knows
 * works, binary ones included, and `VALUES` rows are read as data, not as SQL.
 */

/** Where INSERT data waits in a file of the port's own for the engine to read it, a file a request. */
export const insertDir = (dataDir: string): string => join(dataDir, "query-inserts");

/** Makes the folder for INSERT data (only a port that allows writes needs it). */
export function createInsertDir(dataDir: string): void {
  mkdirSync(insertDir(dataDir), { recursive: true, mode: 0o700 });
}

/** Runs `inspected`, an INSERT ending in `FORMAT <name>`, on `data`; then frees the query's place (`release`). */
export async function insertData(
  session: Session,
  dir: string,
  inspected: Inspected,
  data: Uint8Array,
  release: () => void,
): Promise<RunningQuery> {
  const path = join(dir, crypto.randomUUID());
  try {
    await Bun.write(path, data);
    const [, target, format] = /^([\s\S]*) FORMAT (\S+)$/.exec(inspected.line) ?? [];
    if (target === undefined) throw QueryError.of("SYNTAX_ERROR", "An INSERT with data needs a FORMAT");
    const result = await session.queryAsync(
      `${target} FROM INFILE ${literal(path)} COMPRESSION 'none' FORMAT ${format}`,
      { format: "TSVRaw" },
    );
    return finished(inspected.statement, result.rowsRead);
  } catch (error) {
    // the engine names the file it read: the body it came from, to the client
    const engineError = error instanceof QueryError ? error : QueryError.fromEngine(error);
    const text = engineError.text.replaceAll(path, "(the request body)");
    throw new QueryError(engineError.code, engineError.type, text);
  } finally {
    rmSync(path, { force: true });
    release();
  }
}
