import { readdirSync, statSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { syncPath } from "../../engine";
import { backupChain, MANIFEST } from "./manifest";

/**
 * fsyncs every file and directory under `dir`, deepest first: the engine writes a backup's files and a restore's
 * parts without syncing them, and a manifest (or a restore's marker removed) must not reach the disk before what
 * it vouches for. What vanishes meanwhile is passed over: the engine merges restored parts as soon as they are
 * attached, and removes its temporary merge directories (the parts merged stay on disk until it deletes them,
 * minutes later, so a merged part lost to a crash is made again from them).
 */
export function syncTree(dir: string): void {
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) syncTree(path);
      else if (entry.isFile()) syncPath(path);
    }
    syncPath(dir);
  } catch (error) {
    if ((error as { code?: string }).code !== "ENOENT") throw error;
  }
}

/** Bytes of the files under `dir`. */
export function treeBytes(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) bytes += statSync(join(entry.parentPath, entry.name)).size;
  }
  return bytes;
}

/** Whether `path` is missing or an empty directory. */
export function isEmptyOrMissing(path: string): boolean {
  const stat = statSync(path, { throwIfNoEntry: false });
  return stat === undefined || (stat.isDirectory() && readdirSync(path).length === 0);
}

/** Whether `inner` is `outer` or inside it. */
export function isWithin(inner: string, outer: string): boolean {
  const path = relative(resolve(outer), resolve(inner));
  return path === "" || (!path.startsWith("..") && !path.startsWith("/"));
}

/** Names for which the engine writes one archive file instead of a directory (its BACKUP engines decide by them). */
const ARCHIVE = /\.(zip|zipx|jar|tar|tgz|tbz2?|txz|tzst|tar\.[a-z0-9]+)$/i;

/**
 * Why a backup of the data in `dataDir` cannot be made into `dest` (on `base`), if it cannot, in one sentence:
 * nothing is made or changed before these are checked. `dest` is a new or empty directory (a backup there already
 * would be overwritten or mixed), beside `base` when there is one (a chain is one directory of backups), outside
 * the data.
 */
export function destinationProblem(
  dest: string,
  { base, dataDir, database }: { base?: string | undefined; dataDir?: string | undefined; database: string },
): string | undefined {
  const parent = dirname(resolve(dest));
  if (statSync(parent, { throwIfNoEntry: false })?.isDirectory() !== true) {
    return `${parent}, where the backup ${basename(dest)} would go, is not an existing directory`;
  }
  if (ARCHIVE.test(dest)) return `${dest} must name a directory: the engine would write an archive for that name`;
  const stat = statSync(dest, { throwIfNoEntry: false });
  if (stat !== undefined && !stat.isDirectory()) return `${dest} exists and is not a directory`;
  if (stat !== undefined && readdirSync(dest).includes(MANIFEST)) {
    return `${dest} is a backup already: give a new directory (to back up only what changed since it, pass it as --base)`;
  }
  if (!isEmptyOrMissing(dest)) return `${dest} is not empty: give a new or empty directory`;
  if (dataDir !== undefined && (isWithin(dest, dataDir) || isWithin(dataDir, dest))) {
    return `${dest} and the data directory ${dataDir} must not be inside one another`;
  }
  if (base === undefined) return undefined;
  const chain = backupChain(base);
  if (typeof chain === "string") return `--base: ${chain}`;
  if (chain[0]!.manifest.database !== database) {
    return `--base ${base} is a backup of the database ${chain[0]!.manifest.database}, not of ${database}`;
  }
  if (dirname(resolve(base)) !== parent) {
    return `--base ${base} must be in the directory the new backup goes in (${parent}): a chain is kept in one directory`;
  }
  return undefined;
}
