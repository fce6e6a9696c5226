import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];

/** A new directory under the system's temporary one, removed by `removeScratchDirs` when the tests are done. */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/**
 * Removes every scratch directory made so far. Called after the tests (test/setup.ts): after each file in a
 * `--parallel` worker, else once after all of them. `bun test` runs no `exit` handlers, so directories registered
 * with one stayed behind (5 GB of them here).
 */
export function removeScratchDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
