import { existsSync, mkdirSync, rmSync } from "node:fs";
import type { BackupManifest, TableStats } from "./manifest";

/**
 * What `ingest backup` prints when a backup is made (one JSON line), and what the admin door answers with: where,
 * of which database, on which base, and the rows and bytes copied, with how long it took.
 */
export interface BackupSummary {
  readonly backup: string;
  readonly database: string;
  readonly base: string | null;
  readonly id: string;
  readonly tables: Readonly<Record<string, TableStats>>;
  readonly rows: number;
  readonly bytes: number;
  readonly seconds: number;
}

export function backupSummary(dest: string, base: string | undefined, manifest: BackupManifest): BackupSummary {
  const tables = manifest.tables;
  return {
    backup: dest,
    database: manifest.database,
    base: base ?? null,
    id: manifest.id,
    tables,
    rows: Object.values(tables).reduce((sum, table) => sum + table.rows, 0),
    bytes: manifest.bytes,
    seconds: Math.round(manifest.seconds * 1000) / 1000,
  };
}

/**
 * Runs `make` (a backup into `dest`, which `destinationProblem` found missing or empty), and when it fails removes
 * what it made there, and nothing else: `dest` is left as it was found, then the error goes on.
 */
export async function intoDestination<T>(dest: string, make: () => Promise<T>): Promise<T> {
  const existed = existsSync(dest);
  try {
    return await make();
  } catch (error) {
    rmSync(dest, { recursive: true, force: true });
    if (existed) mkdirSync(dest);
    throw error;
  }
}
