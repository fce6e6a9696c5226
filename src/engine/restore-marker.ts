import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The file `ingest restore` writes into a data directory before anything else and removes once every restored
 * file is on disk: while it is there the directory holds part of a restore (the restore was killed, or failed), and
 * nothing opens it but another restore. Its name says what it is to whoever lists the directory.
 */
export const RESTORE_MARKER = "restore-incomplete";

/**
 * Says that `dataDir` holds an unfinished restore, if it does, as a sentence naming what to do: a service that
 * started on it would serve a database with only some of its tables or parts, and say nothing.
 */
export function incompleteRestore(dataDir: string): string | undefined {
  if (!existsSync(join(dataDir, RESTORE_MARKER))) return undefined;
  return (
    `${dataDir} holds an incomplete restore (${RESTORE_MARKER} is there: a restore into it was stopped or ` +
    "failed); run ingest restore into it again with --force, or remove the directory."
  );
}

/** Writes the marker into `dataDir` (made if missing), synced with its directory entry, before the restore begins. */
export function markRestoring(dataDir: string, about: string): void {
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(join(dataDir, RESTORE_MARKER), `${about}\n`);
  syncPath(join(dataDir, RESTORE_MARKER));
  syncPath(dataDir);
}

/** Removes the marker, synced: the last step of a restore, once everything it wrote is on disk. */
export function unmarkRestoring(dataDir: string): void {
  rmSync(join(dataDir, RESTORE_MARKER), { force: true });
  syncPath(dataDir);
}

/** fsync of a file or a directory (a directory's entries: a file made or removed in it). */
export function syncPath(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
