import { basename } from "node:path";
import { parseArgs } from "node:util";
import { type Config, ConfigError, loadConfig } from "../config";
import { heldBy, incompleteRestore } from "../engine";
import { serverBackupStatements } from "../storage";

/**
 * What `ingest backup` and `ingest restore` share: how they read their arguments and configuration, how they
 * refuse (one sentence, exit 2, nothing changed), and what they say with a ClickHouse server.
 */

/** A refusal: the sentence, on standard error, and exit status 2. */
export function refuse(command: string, sentence: string): number {
  process.stderr.write(`ingest ${command}: ${sentence}.\n`);
  return 2;
}

/** A failure after something was begun: exit status 1. */
export function failed(command: string, sentence: string): number {
  process.stderr.write(`ingest ${command}: ${sentence}\n`);
  return 1;
}

type Options = NonNullable<Parameters<typeof parseArgs>[0]>["options"];

/**
 * `args` as `options` and one path; or, for anything else, the refusal's exit status (the usage, when asked for:
 * 0).
 */
export function commandArgs<O extends NonNullable<Options>>(
  command: string,
  args: readonly string[],
  options: O,
  usage: string,
): { values: Record<string, string | boolean | undefined>; path: string } | number {
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: [...args],
      options: { ...options, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
    });
  } catch (error) {
    // parseArgs' message, to its first sentence: `Unknown option '--x'`, `Option '--base <value>' argument missing`
    const sentence = (error as Error).message.split(/\. /)[0]!.replace(/\.$/, "");
    return refuse(command, `${sentence} (see ingest ${command} --help)`);
  }
  if (parsed.values.help === true) {
    process.stdout.write(usage);
    return 0;
  }
  const [path, ...more] = parsed.positionals;
  if (path === undefined || path === "") return refuse(command, `give the directory (see ingest ${command} --help)`);
  if (more.length > 0) return refuse(command, `unexpected argument "${more[0]}": give one directory`);
  return { values: parsed.values as Record<string, string | boolean | undefined>, path };
}

/** The configuration, with `--data-dir` for DATA_DIR and no port of its own; or the refusal's exit status. */
export function commandConfig(env: NodeJS.ProcessEnv, dataDir: unknown): Config | number {
  try {
    const { QUERY_PORT: _query, METRICS_PORT: _metrics, ...settings } = env; // this process serves no port
    return loadConfig({ ...settings, ...(typeof dataDir === "string" && { DATA_DIR: dataDir }) });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 2;
  }
}

/**
 * Why the data directory cannot be opened by this command, if it cannot: a running service holds it (backing up
 * or restoring through a running service is for its admin door, not this), or a restore into it never finished.
 */
export function dataDirProblem(dataDir: string, restoring = false): string | undefined {
  const held = heldBy(dataDir);
  if (held !== undefined) return `${held}: stop it first (this command works on a stopped data directory)`;
  return restoring ? undefined : incompleteRestore(dataDir)?.replace(/\.$/, "");
}

/**
 * With CLICKHOUSE_URL the data and its backups are the server's: this process cannot reach its disks, so it says
 * how to back up and restore with the server's own statements, and exits 2 (nothing was backed up, and a script
 * that runs this must not take it for a backup made).
 */
export function onServer(command: string, config: Config, path: string, base?: string): number {
  if (config.clickhouse.kind !== "server") return -1;
  const { backup, restore } = serverBackupStatements(
    config.clickhouse.database,
    config.clickhouse.cluster,
    basename(path),
    base === undefined ? undefined : basename(base),
  );
  process.stderr.write(
    `ingest ${command}: with CLICKHOUSE_URL the data is the server's; ${command === "backup" ? "back it up" : "restore it"} with the server's own ` +
      "statement (the server's configuration must allow the disk, backups.allowed_disk):\n" +
      `  ${command === "backup" ? backup : restore};\n` +
      (command === "restore"
        ? "  -- into a database that does not exist yet, or holds none of these tables\n"
        : `  -- restore: ${restore};\n${base === undefined ? "  -- incremental: add SETTINGS base_backup = Disk('backups', 'PREVIOUS')\n" : ""}`),
  );
  return 2;
}
