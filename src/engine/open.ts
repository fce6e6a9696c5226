import { existsSync, lstatSync, mkdirSync, readlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import type { Session } from "chdb";
import { incompleteRestore } from "./restore-marker";
import { detachStdin } from "./stdin";
import { prepareEmbeddedEngine } from "./unpack";

/** chDB's `Session`, as every user of the embedded engine opens its connections. */
export type SessionConstructor = new (path: string) => Session;

/**
 * The name of the engine's default database. chDB (like clickhouse-local) makes its default database an Overlay
 * that includes a filesystem database: any path, relative to the working directory or absolute, is a table
 * there (`SELECT * FROM default.\`/etc/passwd\``). Renamed, the Overlay is still there under this name, and
 * `default` is an ordinary Atomic database like any other; the query port never lets a query name this one.
 */
const OVERLAY_DATABASE = "_local";

/** The folder, inside the data directory and kept empty, that the engine's file-reaching settings point at. */
const EMPTY_DIR = "empty";

/**
 * The engine's start-up options, fixed for the life of the process (chDB starts one engine per data directory,
 * with the options of its first connection):
 * - the Overlay default database renamed (above);
 * - the paths the engine reads user files, schemas, scripts and libraries from, an empty folder of the service's.
 * - with `backupsDir`, the one directory `BACKUP` and `RESTORE` may reach (`File('name')` is a name in it): set
 *   only by `ingest backup` and `ingest restore`, so that the service's engine, which a writable query port reaches,
 *   can write backups nowhere.
 * (chDB sets `allow_introspection_functions` and `implicit_select` on every query of every connection, whatever the
 * start-up options say: the query port turns them off on each of its sessions.)
 */
function engineArguments(dataDir: string, backupsDir: string | undefined): string[] {
  const empty = join(resolve(dataDir), EMPTY_DIR);
  return [
    ...(backupsDir === undefined ? [] : [`--backups.allowed_path=${resolve(backupsDir)}/`]),
    `--default_database=${OVERLAY_DATABASE}`,
    ...[
      "user_files_path",
      "format_schema_path",
      "user_scripts_path",
      "dictionaries_lib_path",
      "top_level_domains_path",
    ].map((name) => `--${name}=${empty}/`),
  ];
}

/** The engine's first connection, held for the life of the process so that its options stay in force. */
let opened: { dataDir: string; anchor: Session; backupsDir: string | undefined } | undefined;

/** What only `ingest backup` and `ingest restore` ask of the engine when they open it. */
export interface EngineOpenOptions {
  /** The directory BACKUP and RESTORE may use (`engineArguments`). */
  readonly backupsDir?: string;
  /** The caller is the restore that wrote the directory's marker: open it anyway. */
  readonly restoring?: boolean;
}

/**
 * Opens the embedded engine on `dataDir`, once per process, with `engineArguments`: whatever uses the engine (the
 * write path, the query port, `ingest query`, the import, backup and restore) calls this before its first
 * connection, and later connections to the same directory share the engine it started. Returns chDB's `Session`.
 * A directory an unfinished restore left is refused (restore-marker.ts), except to the restore itself.
 */
export async function openEmbeddedEngine(
  dataDir: string,
  nativeCacheDir: string,
  options: EngineOpenOptions = {},
): Promise<SessionConstructor> {
  await prepareEmbeddedEngine(nativeCacheDir); // the compiled executable unpacks its engine first
  detachStdin(); // the engine would take what waits on standard input for its inserts' data
  // chDB's ESM entry loads its CommonJS one at run time (createRequire), out of the compiled executable's reach;
  // a require here is bundled, and still runs only now, after the engine is unpacked.
  const { Session } = require("chdb") as typeof import("chdb");
  if (opened === undefined) {
    const incomplete = options.restoring ? undefined : incompleteRestore(dataDir);
    if (incomplete !== undefined) throw new Error(incomplete);
    mkdirSync(join(dataDir, EMPTY_DIR), { recursive: true });
    ensureDefaultDatabase(dataDir);
    const { backupsDir } = options;
    const anchor = new Session(dataDir, { connectionArgs: engineArguments(dataDir, backupsDir) });
    opened = { dataDir, anchor, backupsDir };
  } else if (resolve(opened.dataDir) !== resolve(dataDir)) {
    throw new Error(`the embedded engine is open on ${opened.dataDir}; one data directory per process`);
  } else if (options.backupsDir !== undefined && options.backupsDir !== opened.backupsDir) {
    throw new Error(`the embedded engine was opened without backups in ${options.backupsDir}`);
  }
  return Session;
}

/**
 * With the Overlay renamed, `default` is loaded from the data directory like any database, and the engine will not
 * start without it: `metadata/default.sql` names it an Atomic database with the UUID of its folder in `store/`.
 *
 * The engine gives the Overlay's own Atomic part the UUID that the `metadata/default` symlink points at, which an
 * Atomic `default` database makes (for convenience only: it finds its tables by its UUID) at every start, so that
 * at the next start two databases claim one UUID and the engine aborts. The symlink is removed before the engine
 * starts. A directory the Overlay used as `default` has the symlink and no `default.sql`: its UUID is kept, so
 * `default` keeps its tables.
 */
function ensureDefaultDatabase(dataDir: string): void {
  const metadata = join(dataDir, "metadata");
  const definition = join(metadata, "default.sql");
  const symlink = join(metadata, "default");
  const linked = lstatSync(symlink, { throwIfNoEntry: false })?.isSymbolicLink()
    ? basename(readlinkSync(symlink))
    : undefined;
  if (!existsSync(definition)) {
    mkdirSync(metadata, { recursive: true });
    writeFileSync(definition, `ATTACH DATABASE _ UUID '${linked ?? crypto.randomUUID()}'\nENGINE = Atomic\n`);
  }
  if (linked !== undefined) unlinkSync(symlink);
}
