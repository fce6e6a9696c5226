import { existsSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { SERVICE_VERSION } from "../../config";
import { syncPath } from "../../engine";
import { SCHEMA_VERSION } from "../schema";

/**
 * The file that makes a directory a backup of this service: written last, atomically (a temporary name, synced,
 * renamed, the directory synced), once every file of the engine's backup is on disk. A directory without it is a
 * backup that was stopped or failed before it finished, whatever else it holds, and nothing restores it.
 */
export const MANIFEST = "ingest-backup.json";

/** What the engine writes into a backup's directory: its own list of files, and the tables' definitions and data. */
const ENGINE_FILES = new Set([".backup", "metadata", "data"]);

/** The manifest's own layout; a reader refuses a layout it does not know. */
const MANIFEST_FORMAT = 1;

/** One table as the backup found it: the rows and bytes of its parts (rows not yet collapsed by a merge included). */
export interface TableStats {
  readonly rows: number;
  readonly bytes: number;
}

export interface BackupManifest {
  readonly format: typeof MANIFEST_FORMAT;
  /** The service version that made it, and its schema version (`SCHEMA_VERSION`). */
  readonly service: string;
  readonly schema: number;
  /** The engine's version (`SELECT version()`): for the operator; the service version pins it. */
  readonly engine: string;
  readonly database: string;
  /** The engine's own id of the backup; an incremental one names its base by name and id. */
  readonly id: string;
  readonly base: { readonly name: string; readonly id: string } | null;
  readonly started: string;
  readonly seconds: number;
  readonly tables: Readonly<Record<string, TableStats>>;
  /** Bytes this backup's directory holds (an incremental one: only what its base did not have). */
  readonly bytes: number;
}

/** The manifest of this service's version, for a backup just made. */
export function newManifest(fields: Omit<BackupManifest, "format" | "service" | "schema">): BackupManifest {
  return { format: MANIFEST_FORMAT, service: SERVICE_VERSION, schema: SCHEMA_VERSION, ...fields };
}

/** Writes `manifest` into `dir` atomically and durably: the last step of a backup. */
export function writeManifest(dir: string, manifest: BackupManifest): void {
  const temporary = join(dir, `.${MANIFEST}.${process.pid}`);
  writeFileSync(temporary, `${JSON.stringify(manifest, null, 2)}\n`);
  syncPath(temporary);
  renameSync(temporary, join(dir, MANIFEST));
  syncPath(dir);
}

/** A backup, found and read: where it is and what its manifest says. */
export interface Backup {
  readonly dir: string;
  readonly manifest: BackupManifest;
}

/** The backup in `dir`; or, when there is none, the sentence saying what is there instead. */
export function readBackup(dir: string): Backup | string {
  const stat = statSync(dir, { throwIfNoEntry: false });
  if (stat === undefined) return `${dir} does not exist`;
  if (!stat.isDirectory()) return `${dir} is not a directory`;
  if (!existsSync(join(dir, MANIFEST))) {
    // what the engine's BACKUP writes first: a backup of this service that did not finish
    const begun = readdirSync(dir).some((name) => ENGINE_FILES.has(name));
    return begun
      ? `${dir} is not a complete backup: it has no ${MANIFEST}, which a backup writes last (one that was stopped ` +
          "or failed leaves none); make a new one"
      : `${dir} is not a backup of ingest (it has no ${MANIFEST})`;
  }
  try {
    const manifest = JSON.parse(readFileSync(join(dir, MANIFEST), "utf8")) as BackupManifest;
    if (manifest.format !== MANIFEST_FORMAT || typeof manifest.database !== "string") throw new Error("layout");
    return { dir, manifest };
  } catch {
    return `${dir}/${MANIFEST} is not a manifest this version of ingest reads`;
  }
}

/**
 * The chain of backups that restoring `dir` needs, newest first, down to its full backup; or the sentence saying
 * which link is missing. Each incremental backup names its base by name and id, in the same directory: a chain is
 * kept, and moved, as one directory of backups (the engine finds a base by its name there).
 */
export function backupChain(dir: string): Backup[] | string {
  const chain: Backup[] = [];
  for (let at: string | undefined = dir; at !== undefined; ) {
    const backup = readBackup(at);
    if (typeof backup === "string") {
      if (chain.length === 0) return backup;
      return `${backup}, and ${chain.at(-1)!.dir} is an incremental backup made on it: keep a chain of backups together in one directory`;
    }
    const base = chain.at(-1)?.manifest.base;
    if (base !== undefined && base !== null && backup.manifest.id !== base.id) {
      return `${at} is not the backup ${chain.at(-1)!.dir} was made on (another backup of that name)`;
    }
    if (chain.length > 0 && backup.manifest.database !== chain[0]!.manifest.database) {
      return `${at} is a backup of another database than ${dir}`;
    }
    chain.push(backup);
    if (chain.length > 1000) return `${dir}'s chain of base backups does not end`;
    const next = backup.manifest.base;
    at = next === null ? undefined : join(dirname(at), basename(next.name));
  }
  return chain;
}

/**
 * Why this version cannot restore `manifest` into `database`, if it cannot: a backup of another database, or made
 * by a newer service or schema (an older one is upgraded at startup, as any older database is).
 */
export function incompatibility(manifest: BackupManifest, dir: string, database: string): string | undefined {
  if (manifest.database !== database) {
    return (
      `${dir} is a backup of the database ${manifest.database}, not of ${database} (CLICKHOUSE_DATABASE); set ` +
      `CLICKHOUSE_DATABASE=${manifest.database} to restore it`
    );
  }
  if (manifest.schema > SCHEMA_VERSION || compareVersions(manifest.service, SERVICE_VERSION) > 0) {
    return (
      `${dir} was made by ingest ${manifest.service} (schema ${manifest.schema}), newer than this ingest ` +
      `${SERVICE_VERSION} (schema ${SCHEMA_VERSION}); restore it with ingest ${manifest.service} or later`
    );
  }
  return undefined;
}

/** Orders two `major.minor.patch` versions (a pre-release part is ignored). */
export function compareVersions(a: string, b: string): number {
  const parts = (version: string) => version.split(/[-+]/)[0]!.split(".").map(Number);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const difference = (x[i] ?? 0) - (y[i] ?? 0);
    if (difference !== 0) return Math.sign(difference);
  }
  return 0;
}
