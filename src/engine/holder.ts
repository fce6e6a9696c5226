import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The process holding an embedded data directory, if one does: the engine writes its PID into `status` and locks
 * that file while it runs, and removes it when it stops.
 */
function holderOf(dataDir: string): number | undefined {
  let status: string;
  try {
    status = readFileSync(join(dataDir, "status"), "utf8");
  } catch {
    return undefined;
  }
  const pid = Number(/^PID: (\d+)$/m.exec(status)?.[1]);
  if (!Number.isInteger(pid) || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (error) {
    return (error as { code?: string }).code === "EPERM" ? pid : undefined; // EPERM: alive, another user's
  }
}

/**
 * Says which running service holds `dataDir`, if one does, as the start of a sentence (the caller says what to do
 * instead): chDB locks a data directory to one process, so a second one cannot open it.
 */
export function heldBy(dataDir: string): string | undefined {
  const holder = holderOf(dataDir);
  return holder === undefined ? undefined : `A running service (process ${holder}) holds ${dataDir}`;
}
