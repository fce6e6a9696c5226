import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type } from "arktype";
import { path } from "./parse";
import { type Env, setting, type Topic } from "./setting";

/** What the embedded engine writes to disk (fsync) before going on; docs/architecture.md#durability. */
const FSYNC_LEVELS = ["none", "merges", "all"] as const;
export type Fsync = (typeof FSYNC_LEVELS)[number];

/** The usual per-user cache directory, or the system's temporary directory when there is no home. */
function userCacheDir(env: Env): string {
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, "ingest");
  if (env.HOME) return join(env.HOME, ".cache", "ingest");
  return join(tmpdir(), "ingest-cache");
}

/**
 * Where the data goes: a ClickHouse server, or the embedded engine and its files. `loadConfig` gathers these
 * into `Config.clickhouse`, one target of either kind.
 */
export const CLICKHOUSE = {
  clickhouseUrl: setting<string | undefined>({
    env: "CLICKHOUSE_URL",
    parse: type("string.url").narrow(
      (url, ctx) => /^https?:$/.test(new URL(url).protocol) || ctx.reject({ expected: "an http(s) URL" }),
    ),
    default: undefined,
    shownDefault: "none (embedded)",
    help: "A ClickHouse server's HTTP(S) interface, e.g. `http://clickhouse:8123`. Unset: the embedded engine.",
    backend: "any",
  }),
  clickhouseUser: setting({
    env: "CLICKHOUSE_USER",
    parse: type("string"),
    default: "default",
    help: "Server user.",
    backend: "server",
  }),
  clickhousePassword: setting({
    env: "CLICKHOUSE_PASSWORD",
    parse: type("string"),
    default: "",
    shownDefault: "empty",
    help: "Server password.",
    backend: "server",
    redact: "omit",
  }),
  clickhouseDatabase: setting({
    env: "CLICKHOUSE_DATABASE",
    parse: type(/^[A-Za-z_][A-Za-z0-9_]*$/),
    default: "default",
    help: "Database for every table, created if missing (letters, digits, `_`).",
    backend: "any",
  }),
  clickhouseCluster: setting<string | undefined>({
    env: "CLICKHOUSE_CLUSTER",
    parse: type(/^[A-Za-z_][A-Za-z0-9_.-]*$/),
    default: undefined,
    shownDefault: "none (one server)",
    help: "The server's cluster (`remote_servers`): tables are created `ON CLUSTER`, replicated, events sharded.",
    backend: "server",
    refusedElsewhere:
      "CLICKHOUSE_CLUSTER names a cluster of ClickHouse servers; set CLICKHOUSE_URL to one of its nodes",
  }),
  dataDir: setting({
    env: "DATA_DIR",
    parse: path,
    default: () => resolve("./data"),
    shownDefault: "`./data`",
    help: "The embedded engine's data directory; one process at a time.",
    backend: "embedded",
  }),
  fsync: setting<Fsync>({
    env: "FSYNC",
    parse: type.enumerated(...FSYNC_LEVELS),
    default: "merges",
    help: "What the embedded engine syncs to disk before going on: `none`, `merges` (merged parts) or `all` (every insert too).",
    backend: "embedded",
    refusedElsewhere:
      "FSYNC applies to the embedded engine; with CLICKHOUSE_URL the server's own settings decide (fsync_after_insert)",
  }),
  chdbCacheDir: setting({
    env: "CHDB_CACHE_DIR",
    parse: path,
    default: (env) => userCacheDir(env),
    shownDefault: "`$XDG_CACHE_HOME/ingest`, else `~/.cache/ingest`, else `<tmp>/ingest-cache`",
    help: "Where the compiled executable unpacks its embedded engine (about 570 MB, once).",
    backend: "embedded",
  }),
} as const satisfies Topic;
