import { availableParallelism, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type } from "arktype";
import proxyaddr from "proxy-addr";

/**
 * Every setting the service reads, declared once: its environment variable, how its text is parsed and checked,
 * its default, a one-line help, and which backend it applies to. `Config`, the startup validation, `--help` and
 * the README's configuration table are all derived from this table (docs/operations.md#configuration).
 */

/** What the embedded engine writes to disk (fsync) before going on; docs/architecture.md#durability. */
/** Log levels, least to most severe. */
export const LEVELS = ["debug", "info", "warn", "error"] as const;
export type Level = (typeof LEVELS)[number];

const FSYNC_LEVELS = ["none", "merges", "all"] as const;
export type Fsync = (typeof FSYNC_LEVELS)[number];

/** The environment as the service reads it. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Where a setting has an effect: always, or only with the embedded engine, or only with a ClickHouse server. */
export type Backend = "any" | "embedded" | "server";

export interface Setting<T> {
  /** The environment variable. */
  readonly env: string;
  /** Parses and checks the variable's text (trimmed, unless the value is a secret). */
  readonly parse: (text: string) => T | type.errors;
  /** The value when the variable is unset or empty; computed from the environment where it depends on it. */
  readonly default: T | ((env: Env) => T);
  /** The default in words (Markdown), where it is not a value to show as it is. */
  readonly shownDefault?: string;
  /** One line: what it does. */
  readonly help: string;
  readonly backend: Backend;
  /** A value set for the other backend is refused with this reason, rather than ignored (ignoring it would mislead). */
  readonly refusedElsewhere?: string;
  /** How it appears in the logged configuration: left out, or only counted. Untrimmed when left out. */
  readonly redact?: "omit" | "count";
}

const positive = type("string.integer.parse").to("number.integer > 0");
const port = type("string.integer.parse").to("0 <= number.integer <= 65535");
const list = type("string").pipe((value) =>
  value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0),
);
const isOrigin = (value: string): boolean => URL.canParse(value) && new URL(value).origin === value;
const origins = list.to(
  type("string[]").narrow((values, ctx) => {
    const bad = values.find((origin) => !isOrigin(origin));
    return bad === undefined || ctx.reject({ expected: "a list of origins like https://app.example.com", actual: bad });
  }),
);
const set =
  <T>(parse: (text: string) => T[] | type.errors) =>
  (text: string) => {
    const values = parse(text);
    return values instanceof type.errors ? values : new Set(values);
  };
const path = type("string").pipe((value) => resolve(value));
/** `0` or `1`, as a boolean. */
const flag = type("'0' | '1'").pipe((value) => value === "1");
/** Addresses and CIDR ranges, or proxy-addr's names for ranges (`loopback`, `linklocal`, `uniquelocal`). */
const proxies = list.to(
  type("string[]").narrow((values, ctx) => {
    const bad = values.find((value) => !isProxyRange(value));
    return bad === undefined || ctx.reject({ expected: "addresses or CIDR ranges like 10.0.0.0/8", actual: bad });
  }),
);
const isProxyRange = (value: string): boolean => {
  try {
    proxyaddr.compile(value);
    return true;
  } catch {
    return false;
  }
};

/** Larger bodies than this could not be held as one string by the JSON parser anyway. */
const MAX_BATCH_BYTES_CEILING = 2 ** 30;

/** The usual per-user cache directory, or the system's temporary directory when there is no home. */
function userCacheDir(env: Env): string {
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, "ingest");
  if (env.HOME) return join(env.HOME, ".cache", "ingest");
  return join(tmpdir(), "ingest-cache");
}

function setting<T>(spec: Setting<T>): Setting<T> {
  return spec;
}

/** In the order `--help` and the README list them. */
export const SETTINGS = {
  port: setting({
    env: "PORT",
    parse: port,
    default: 8000,
    help: "Listening port (0 picks a free one).",
    backend: "any",
  }),
  host: setting({ env: "HOST", parse: type("string"), default: "0.0.0.0", help: "Listening address.", backend: "any" }),
  allowedOrigins: setting<ReadonlySet<string>>({
    env: "ALLOWED_ORIGINS",
    parse: set(origins),
    default: new Set(),
    shownDefault: "none",
    help: "Comma-separated browser origins (`scheme://host[:port]`), matched exactly against `Origin`.",
    backend: "any",
  }),
  publicApiKeys: setting<ReadonlySet<string>>({
    env: "PUBLIC_API_KEYS",
    parse: set(list),
    default: new Set(),
    shownDefault: "none",
    help: "Comma-separated api keys. Backend (no-`Origin`) ingest is on exactly when one is set.",
    backend: "any",
    redact: "count",
  }),
  maxEventsPerBatch: setting({
    env: "MAX_EVENTS_PER_BATCH",
    parse: positive,
    default: 10_000,
    help: "Most items in one batch; more is 413.",
    backend: "any",
  }),
  maxBatchBytes: setting({
    env: "MAX_BATCH_BYTES",
    parse: type("string.integer.parse").to(`0 < number.integer <= ${MAX_BATCH_BYTES_CEILING}`),
    default: 20 * 2 ** 20,
    shownDefault: "`20971520` (20 MiB)",
    help: "Most body bytes, on the wire and again after gzip inflation; more is 413. At most 1 GiB.",
    backend: "any",
  }),
  requestTimeoutMs: setting({
    env: "REQUEST_TIMEOUT_MS",
    parse: positive,
    default: 30_000,
    help: "How long a request body may take to arrive; a slower upload is cut off with 408.",
    backend: "any",
  }),
  shutdownTimeoutMs: setting({
    env: "SHUTDOWN_TIMEOUT_MS",
    parse: type("string.integer.parse").to("number.integer >= 0"),
    default: 10_000,
    help: "After SIGTERM or SIGINT, how long requests in flight may run before their connections are closed.",
    backend: "any",
  }),
  maxQueuedEvents: setting({
    env: "MAX_QUEUED_EVENTS",
    parse: positive,
    default: 100_000,
    help: "Most events waiting to be written; past it, 503 with `Retry-After: 1`.",
    backend: "any",
  }),
  maxPendingBytes: setting({
    env: "MAX_PENDING_BYTES",
    parse: positive,
    default: 32 * 2 ** 20,
    shownDefault: "`33554432` (32 MiB)",
    help: "Most body bytes (inflated) of all requests in flight; past it, 503 with `Retry-After: 1`. At least `MAX_BATCH_BYTES`.",
    backend: "any",
  }),
  maxFlushEvents: setting({
    env: "MAX_FLUSH_EVENTS",
    parse: positive,
    default: 10_000,
    help: "Most events one write to ClickHouse takes; concurrent requests are coalesced up to it (a batch is never split).",
    backend: "any",
  }),
  flushLingerMs: setting({
    env: "FLUSH_LINGER_MS",
    parse: type("string.integer.parse").to("0 <= number.integer <= 1000"),
    default: 10,
    help: "Most a write waits for the clients the previous write answered to send again (0: never).",
    backend: "any",
  }),
  linkCacheEntries: setting({
    env: "LINK_CACHE_ENTRIES",
    parse: positive,
    default: 200_000,
    help: "Distinct ID → person links held in memory (about 230 bytes each); embedded, size it above your distinct IDs.",
    backend: "any",
  }),
  linkCacheTtlMs: setting({
    env: "LINK_CACHE_TTL_MS",
    parse: positive,
    default: 5_000,
    help: "With other instances writing: how long a cached link may serve events that change no person.",
    backend: "server",
  }),
  correctClockSkew: setting({
    env: "CORRECT_CLOCK_SKEW",
    parse: flag,
    default: false,
    shownDefault: "`0`",
    help: "`1`: move each `timestamp` by the client clock's error that `sent_at` shows, as PostHog does. `0`: store timestamps as sent.",
    backend: "any",
  }),
  personlessEvents: setting({
    env: "PERSONLESS_EVENTS",
    parse: flag,
    default: true,
    shownDefault: "`1`",
    help: "`1`: an event with `$process_person_profile: false` makes and changes no person, as PostHog does (it keeps its ID's person, or the one a first profile would make). `0`: every event is a profile event.",
    backend: "any",
  }),
  personAutoProperties: setting({
    env: "PERSON_AUTO_PROPERTIES",
    parse: flag,
    default: true,
    shownDefault: "`1`",
    help: "`1`: set `$browser`, `$os`, `$current_url`, `utm_*` and the like from events on their person, and `$initial_*` once, as PostHog does. `0`: only what SDKs `$set`.",
    backend: "any",
  }),
  typedProperties: setting({
    env: "TYPED_PROPERTIES",
    parse: flag,
    default: false,
    shownDefault: "`0`",
    help: "`1`: add `events.properties_typed`, the properties in the engine's JSON type, computed as events are inserted: property reads 2–10× faster, ingest of posthog-js events about 40% slower (docs/analytics.md). `0`: none added; one that exists is kept until dropped.",
    backend: "any",
  }),
  captureIp: setting({
    env: "CAPTURE_IP",
    parse: flag,
    default: true,
    shownDefault: "`1`",
    help: "`1`: store each event's client address in `events.ip` (the event's own `$ip`, else the connection's). `0`: store none.",
    backend: "any",
  }),
  geoip: setting({
    env: "GEOIP",
    parse: flag,
    default: true,
    shownDefault: "`1`",
    help: "`1`: locate events from public addresses: PostHog's `$geoip_*` in `events.geoip` and in the properties of `events_resolved` (and on their person, with `PERSON_AUTO_PROPERTIES`). `0`: none.",
    backend: "any",
  }),
  geoipDatabase: setting<string | undefined>({
    env: "GEOIP_DATABASE",
    parse: path,
    default: undefined,
    shownDefault: "bundled: DB-IP country",
    help: "A MaxMind DB file (GeoIP2 or GeoLite2 City, or Country) to locate addresses with, instead of the bundled country database.",
    backend: "any",
  }),
  trustedProxies: setting<readonly string[]>({
    env: "TRUSTED_PROXIES",
    parse: proxies,
    default: [],
    shownDefault: "none",
    help: "Comma-separated addresses or CIDR ranges of your load balancers: from these, the client is the nearest untrusted address in `X-Forwarded-For`.",
    backend: "any",
  }),
  repairIntervalS: setting({
    env: "REPAIR_INTERVAL_S",
    parse: type("string.integer.parse").to("0 <= number.integer <= 3600"),
    default: 60,
    help: "How often identity facts no person reflects yet (a write that failed half-way, never retried) are derived (0: only at startup).",
    backend: "any",
  }),
  personCacheMiB: setting({
    env: "PERSON_CACHE_MIB",
    parse: positive,
    default: 512,
    help: "Memory for cached persons (their identity facts, folded), estimated from their IDs and properties (a posthog-js user's about 30 KB).",
    backend: "embedded",
  }),
  logLevel: setting<Level>({
    env: "LOG_LEVEL",
    parse: type.enumerated(...LEVELS),
    default: "info",
    help: `${LEVELS.map((level) => `\`${level}\``).join(", ")}: JSON lines on stdout.`,
    backend: "any",
  }),
  metricsPort: setting<number | undefined>({
    env: "METRICS_PORT",
    parse: port,
    default: undefined,
    shownDefault: "off",
    help: "Serve Prometheus metrics at `GET /metrics` on this port, on `HOST` (0 picks a free one).",
    backend: "any",
  }),
  queryPort: setting<number | undefined>({
    env: "QUERY_PORT",
    parse: port,
    default: undefined,
    shownDefault: "off",
    help: "Serve ClickHouse's HTTP interface over the embedded engine on this port, on `HOST`; needs `QUERY_PASSWORD`.",
    backend: "embedded",
    refusedElsewhere:
      "QUERY_PORT serves the embedded engine; with CLICKHOUSE_URL, query the server's own HTTP interface instead",
  }),
  queryUser: setting({
    env: "QUERY_USER",
    parse: type("string"),
    default: "default",
    help: "The user the query port accepts.",
    backend: "embedded",
  }),
  queryPassword: setting({
    env: "QUERY_PASSWORD",
    parse: type("string"),
    default: "",
    shownDefault: "none",
    help: "The query port's password (required with `QUERY_PORT`).",
    backend: "embedded",
    redact: "omit",
  }),
  queryReadonly: setting({
    env: "QUERY_READONLY",
    parse: flag,
    default: true,
    shownDefault: "`1`",
    help: "`1`: queries may only read. `0`: a POST may also insert, create, alter and drop tables.",
    backend: "embedded",
  }),
  queryTimeoutS: setting({
    env: "QUERY_TIMEOUT_S",
    parse: positive,
    default: 30,
    help: "Longest a query may run (`max_execution_time`).",
    backend: "embedded",
  }),
  queryConcurrency: setting({
    env: "QUERY_CONCURRENCY",
    parse: positive,
    default: 2,
    help: "Most queries running at once; more wait up to 10 s, then get `TOO_MANY_SIMULTANEOUS_QUERIES`.",
    backend: "embedded",
  }),
  queryMaxThreads: setting({
    env: "QUERY_MAX_THREADS",
    parse: positive,
    default: () => Math.max(1, Math.floor(availableParallelism() / 2)),
    shownDefault: "half the cores, at least 1",
    help: "Most threads one query uses (`max_threads`), so that ingest keeps the rest.",
    backend: "embedded",
  }),
  queryMaxMemoryMiB: setting({
    env: "QUERY_MAX_MEMORY_MIB",
    parse: positive,
    default: 1024,
    help: "Most memory one query may use (`max_memory_usage`).",
    backend: "embedded",
  }),
  queryMaxResultMiB: setting({
    env: "QUERY_MAX_RESULT_MIB",
    parse: positive,
    default: 1024,
    help: "Largest result one query may return (`max_result_bytes`, before compression).",
    backend: "embedded",
  }),
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
} as const;

export type SettingKey = keyof typeof SETTINGS;

/** Every setting's value, as parsed: what `Config` is made of. */
export type Settings = { readonly [K in SettingKey]: (typeof SETTINGS)[K] extends Setting<infer T> ? T : never };

/** The variables this service reads; nothing else in the environment is looked at (but `HOME`, for a default). */
export const ENV_NAMES: readonly string[] = Object.values(SETTINGS).map((s) => s.env);
