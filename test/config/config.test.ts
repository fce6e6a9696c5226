import { describe, expect, test } from "bun:test";
import { availableParallelism, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  ConfigError,
  ENV_NAMES,
  loadConfig,
  PERSON_MATERIALIZED_BY_DEFAULT,
  redacted,
  SETTINGS,
  type Setting,
} from "../../src/config";

describe("loadConfig", () => {
  test("defaults: port 8000, 10000 events, 20 MiB, embedded ClickHouse in ./data, backend ingest off", () => {
    const config = loadConfig({});
    expect(config.host).toBe("0.0.0.0");
    expect(config.port).toBe(8000);
    expect(config.maxEventsPerBatch).toBe(10_000);
    expect(config.maxBatchBytes).toBe(20 * 1024 * 1024);
    expect(config.allowedOrigins.size).toBe(0);
    expect(config.publicApiKeys.size).toBe(0);
    expect([config.linkCacheEntries, config.personCacheMiB]).toEqual([200_000, 512]);
    expect(config.clickhouse).toEqual({
      kind: "embedded",
      dataDir: resolve("./data"),
      database: "default",
      nativeCacheDir: join(tmpdir(), "ingest-cache"),
      fsync: "merges",
    });
  });

  test("FSYNC names what the embedded engine puts on disk; a server's own settings decide there, so it is refused with one", () => {
    expect(loadConfig({ FSYNC: "all" }).clickhouse).toMatchObject({ kind: "embedded", fsync: "all" });
    expect(loadConfig({ FSYNC: " none " }).clickhouse).toMatchObject({ fsync: "none" });
    expect(() => loadConfig({ FSYNC: "always" })).toThrow("FSYNC");
    expect(() => loadConfig({ CLICKHOUSE_URL: "http://clickhouse:8123", FSYNC: "all" })).toThrow(
      "FSYNC applies to the embedded engine",
    );
    expect(loadConfig({ CLICKHOUSE_URL: "http://clickhouse:8123" }).clickhouse).not.toHaveProperty("fsync");
  });

  test("SETTLE_AFTER_S: seconds, 0 never; with a server too", () => {
    expect(loadConfig({}).settleAfterS).toBe(3600);
    expect(loadConfig({ SETTLE_AFTER_S: "0" }).settleAfterS).toBe(0);
    expect(loadConfig({ CLICKHOUSE_URL: "http://clickhouse:8123", SETTLE_AFTER_S: "60" }).settleAfterS).toBe(60);
    expect(() => loadConfig({ SETTLE_AFTER_S: "-1" })).toThrow("SETTLE_AFTER_S");
    expect(() => loadConfig({ SETTLE_AFTER_S: "1h" })).toThrow("SETTLE_AFTER_S");
  });

  test("the compiled executable's engine cache: CHDB_CACHE_DIR, else the usual per-user cache", () => {
    const cacheDir = (env: Record<string, string>) =>
      (loadConfig(env).clickhouse as { nativeCacheDir: string }).nativeCacheDir;
    expect(cacheDir({ CHDB_CACHE_DIR: "/srv/cache" })).toBe("/srv/cache");
    expect(cacheDir({ XDG_CACHE_HOME: "/x", HOME: "/home/u" })).toBe("/x/ingest");
    expect(cacheDir({ HOME: "/home/u" })).toBe("/home/u/.cache/ingest");
  });

  test("lists are comma-separated with spaces trimmed and empty items skipped", () => {
    const config = loadConfig({
      ALLOWED_ORIGINS: " https://a.example.com, http://localhost:3000 ,,",
      PUBLIC_API_KEYS: "key-1 ,  key-2,",
    });
    expect([...config.allowedOrigins]).toEqual(["https://a.example.com", "http://localhost:3000"]);
    expect([...config.publicApiKeys]).toEqual(["key-1", "key-2"]);
  });

  test("MATERIALIZED_PROPERTIES: keys that can name a column, each once; `none` for none; anything else refused", () => {
    expect(loadConfig({}).materializedProperties).toContain("$browser");
    expect(loadConfig({ MATERIALIZED_PROPERTIES: "plan, $os,plan" }).materializedProperties).toEqual(["plan", "$os"]);
    expect(loadConfig({ MATERIALIZED_PROPERTIES: "none" }).materializedProperties).toEqual([]);
    for (const bad of ["a.b", "1st", "a`b", "x".repeat(101)])
      expect(() => loadConfig({ MATERIALIZED_PROPERTIES: bad })).toThrow("MATERIALIZED_PROPERTIES");
  });

  test("MATERIALIZED_PERSON_PROPERTIES: as MATERIALIZED_PROPERTIES, by default where a person came from and on what", () => {
    expect(loadConfig({}).materializedPersonProperties).toEqual(PERSON_MATERIALIZED_BY_DEFAULT);
    expect(loadConfig({}).materializedPersonProperties).toContain("$initial_os");
    expect(
      loadConfig({ MATERIALIZED_PERSON_PROPERTIES: " email, $initial_os,email" }).materializedPersonProperties,
    ).toEqual(["email", "$initial_os"]);
    expect(loadConfig({ MATERIALIZED_PERSON_PROPERTIES: "none" }).materializedPersonProperties).toEqual([]);
    for (const bad of ["a.b", "1st", "a`b", "a'b", "x".repeat(101)])
      expect(() => loadConfig({ MATERIALIZED_PERSON_PROPERTIES: bad })).toThrow("MATERIALIZED_PERSON_PROPERTIES");
  });

  test("CLICKHOUSE_URL selects a server, with user, password and database", () => {
    const config = loadConfig({
      CLICKHOUSE_URL: "http://clickhouse:8123",
      CLICKHOUSE_USER: "ingest",
      CLICKHOUSE_PASSWORD: " secret ",
      CLICKHOUSE_DATABASE: "analytics",
      DATA_DIR: "/ignored",
    });
    expect(config.clickhouse).toEqual({
      kind: "server",
      url: "http://clickhouse:8123",
      user: "ingest",
      password: " secret ",
      database: "analytics",
      cluster: undefined,
    });
    expect(loadConfig({ CLICKHOUSE_URL: "https://ch.example.com" }).clickhouse).toMatchObject({
      user: "default",
      password: "",
    });
  });

  test("CLICKHOUSE_CLUSTER names the server's cluster; without a server there is none, so it is refused with one", () => {
    const server = { CLICKHOUSE_URL: "http://clickhouse-1:8123" };
    expect(loadConfig({ ...server, CLICKHOUSE_CLUSTER: " analytics-1 " }).clickhouse).toMatchObject({
      cluster: "analytics-1",
    });
    expect(() => loadConfig({ ...server, CLICKHOUSE_CLUSTER: "a cluster; DROP" })).toThrow("CLICKHOUSE_CLUSTER");
    expect(() => loadConfig({ CLICKHOUSE_CLUSTER: "analytics" })).toThrow(
      "CLICKHOUSE_CLUSTER names a cluster of ClickHouse servers",
    );
  });

  test("empty values count as unset", () => {
    const config = loadConfig({ PORT: "", CLICKHOUSE_URL: " ", MAX_BATCH_BYTES: "" });
    expect(config.port).toBe(8000);
    expect(config.clickhouse.kind).toBe("embedded");
    expect(config.maxBatchBytes).toBe(20 * 1024 * 1024);
  });

  test("numbers are parsed and checked", () => {
    const config = loadConfig({
      PORT: "0",
      MAX_EVENTS_PER_BATCH: "5",
      MAX_BATCH_BYTES: "1024",
      HOST: "127.0.0.1",
      LINK_CACHE_ENTRIES: "2000000",
      PERSON_CACHE_MIB: "512",
      FLUSH_LINGER_MS: "0",
      MAX_FLUSH_EVENTS: "50000",
    });
    expect(config).toMatchObject({
      port: 0,
      maxEventsPerBatch: 5,
      maxBatchBytes: 1024,
      host: "127.0.0.1",
      linkCacheEntries: 2_000_000,
      personCacheMiB: 512,
      flushLingerMs: 0,
      maxFlushEvents: 50_000,
    });
  });

  test("EVENTS_RETENTION_DAYS: unset keeps everything; set, a whole number of days from 1 to 36500", () => {
    expect(loadConfig({}).eventsRetentionDays).toBeUndefined();
    expect(loadConfig({ EVENTS_RETENTION_DAYS: " 90 " }).eventsRetentionDays).toBe(90);
    for (const bad of ["0", "-3", "1.5", "90d", "36501"]) {
      expect(() => loadConfig({ EVENTS_RETENTION_DAYS: bad })).toThrow(/EVENTS_RETENTION_DAYS/);
    }
  });

  test("every bad value is reported at once", () => {
    let error: unknown;
    try {
      loadConfig({
        PORT: "99999",
        MAX_EVENTS_PER_BATCH: "0",
        MAX_BATCH_BYTES: "lots",
        ALLOWED_ORIGINS: "https://ok.example.com,https://bad.example.com/",
        CLICKHOUSE_URL: "ftp://clickhouse",
        CLICKHOUSE_DATABASE: "no-dashes",
        LINK_CACHE_ENTRIES: "0",
        PERSON_CACHE_MIB: "-1",
        FLUSH_LINGER_MS: "5000",
        MAX_FLUSH_EVENTS: "0",
        FSYNC: "sometimes",
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    for (const name of [
      "PORT",
      "MAX_EVENTS_PER_BATCH",
      "MAX_BATCH_BYTES",
      "ALLOWED_ORIGINS",
      "CLICKHOUSE_URL",
      "CLICKHOUSE_DATABASE",
      "LINK_CACHE_ENTRIES",
      "PERSON_CACHE_MIB",
      "FLUSH_LINGER_MS",
      "MAX_FLUSH_EVENTS",
      "FSYNC",
    ]) {
      expect(message).toContain(name);
    }
    expect(message).toContain("https://bad.example.com/");
  });

  test("MAX_PENDING_BYTES below MAX_BATCH_BYTES is refused: such a batch could be busy for as long as others are in flight", () => {
    expect(() => loadConfig({ MAX_BATCH_BYTES: "2000", MAX_PENDING_BYTES: "1999" })).toThrow(
      "MAX_PENDING_BYTES (1999) must be at least MAX_BATCH_BYTES (2000)",
    );
    expect(() => loadConfig({ MAX_BATCH_BYTES: String(100 * 2 ** 20) })).toThrow("MAX_PENDING_BYTES");
    expect(loadConfig({ MAX_BATCH_BYTES: "2000", MAX_PENDING_BYTES: "2000" }).maxPendingBytes).toBe(2000);
    expect(loadConfig({}).maxPendingBytes).toBe(32 * 2 ** 20);
    // reported beside other bad values, when both of its own parse
    expect(() => loadConfig({ PORT: "99999", MAX_PENDING_BYTES: "1" })).toThrow(
      "Invalid configuration:\n  PORT must be at most 65535 (was 99999)\n  MAX_PENDING_BYTES (1) must be at least MAX_BATCH_BYTES (20971520)",
    );
  });

  test("an origin must be scheme://host[:port] exactly", () => {
    for (const origin of ["app.example.com", "https://app.example.com/path", "*", "null"]) {
      expect(() => loadConfig({ ALLOWED_ORIGINS: origin })).toThrow(ConfigError);
    }
  });

  test("the link cache's staleness bound with other writers is a setting of its own", () => {
    expect(loadConfig({}).linkCacheTtlMs).toBe(5_000);
    expect(loadConfig({ LINK_CACHE_TTL_MS: "250" }).linkCacheTtlMs).toBe(250);
    expect(() => loadConfig({ LINK_CACHE_TTL_MS: "0" })).toThrow("LINK_CACHE_TTL_MS");
  });
});

describe("the settings table", () => {
  const settings = Object.values(SETTINGS) as Setting<unknown>[];

  test("every setting has its own variable and a one-line help ending in a full stop", () => {
    expect(new Set(ENV_NAMES).size).toBe(settings.length);
    for (const setting of settings) {
      expect(setting.env).toMatch(/^[A-Z][A-Z0-9_]*$/);
      expect(setting.help).toMatch(/^[A-Z`].*\.$/);
      expect(setting.help).not.toContain("\n");
    }
  });

  test("every plain default, written as its variable, reads back as itself", () => {
    for (const setting of settings) {
      if (typeof setting.default !== "number" && typeof setting.default !== "string") continue;
      if (setting.default === "") continue; // an empty variable counts as unset
      expect([setting.env, setting.parse(String(setting.default))]).toEqual([setting.env, setting.default]);
    }
  });

  test("the configuration is the table's values: a variable set changes exactly its own key", () => {
    const defaults = loadConfig({});
    const changed = loadConfig({ MAX_FLUSH_EVENTS: "123" });
    expect(changed).toEqual({ ...defaults, maxFlushEvents: 123 });
  });
});

describe("redacted", () => {
  test("the logged configuration leaves out the password and only counts the api keys", () => {
    const logged = redacted(
      loadConfig({
        PUBLIC_API_KEYS: "phc_secret_1,phc_secret_2",
        ALLOWED_ORIGINS: "https://app.example.com",
        CLICKHOUSE_URL: "http://clickhouse:8123",
        CLICKHOUSE_PASSWORD: "hunter2",
      }),
    );
    const text = JSON.stringify(logged);
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("phc_secret");
    expect(logged).toMatchObject({
      publicApiKeys: 2,
      allowedOrigins: ["https://app.example.com"],
      clickhouse: { kind: "server", url: "http://clickhouse:8123", user: "default", database: "default" },
    });
  });
});

describe("the query port's settings", () => {
  test("off by default; QUERY_PORT needs a password, serves the embedded engine only, and takes a port of its own", () => {
    expect(loadConfig({}).queryPort).toBeUndefined();
    expect(loadConfig({ QUERY_PORT: "8123", QUERY_PASSWORD: "pw" })).toMatchObject({
      queryPort: 8123,
      queryUser: "default",
      queryReadonly: true,
      queryTimeoutS: 30,
      queryConcurrency: 2,
    });
    expect(() => loadConfig({ QUERY_PORT: "8123" })).toThrow("QUERY_PORT needs QUERY_PASSWORD");
    expect(() => loadConfig({ QUERY_PORT: "8123", QUERY_PASSWORD: "pw", CLICKHOUSE_URL: "http://ch:8123" })).toThrow(
      "QUERY_PORT serves the embedded engine; with CLICKHOUSE_URL, query the server's own HTTP interface instead",
    );
    expect(() => loadConfig({ QUERY_PORT: "8000", QUERY_PASSWORD: "pw" })).toThrow("must differ");
    expect(loadConfig({ QUERY_PORT: "0", METRICS_PORT: "0", PORT: "0", QUERY_PASSWORD: "pw" }).queryPort).toBe(0);
  });

  test("QUERY_READONLY is 0 or 1; the limits are positive", () => {
    expect(loadConfig({ QUERY_READONLY: "0" }).queryReadonly).toBe(false);
    for (const [name, value] of [
      ["QUERY_READONLY", "yes"],
      ["QUERY_TIMEOUT_S", "0"],
      ["QUERY_CONCURRENCY", "-1"],
      ["QUERY_MAX_MEMORY_MIB", "lots"],
      ["QUERY_MAX_THREADS", "0"],
    ] as const) {
      expect(() => loadConfig({ [name]: value })).toThrow(name);
    }
  });

  test("a query takes half the cores by default (QUERY_MAX_THREADS), at least one, so that ingest keeps the rest", () => {
    expect(loadConfig({}).queryMaxThreads).toBe(Math.max(1, Math.floor(availableParallelism() / 2)));
    expect(loadConfig({ QUERY_MAX_THREADS: "3" }).queryMaxThreads).toBe(3);
  });

  test("the query password is never logged", () => {
    const logged = JSON.stringify(redacted(loadConfig({ QUERY_PORT: "8123", QUERY_PASSWORD: "hunter2-query" })));
    expect(logged).not.toContain("hunter2-query");
    expect(logged).toContain('"queryPort":8123');
  });
});

describe("the admin door's settings", () => {
  const token = "0123456789abcdef-token";

  test("off by default; ADMIN_PORT needs a token of 16 characters or more, and a port of its own", () => {
    expect(loadConfig({})).toMatchObject({ adminPort: undefined, adminToken: "" });
    expect(loadConfig({ ADMIN_PORT: "9000", ADMIN_TOKEN: token })).toMatchObject({
      adminPort: 9000,
      adminToken: token,
    });
    expect(() => loadConfig({ ADMIN_PORT: "9000" })).toThrow("ADMIN_PORT needs ADMIN_TOKEN");
    expect(() => loadConfig({ ADMIN_PORT: "9000", ADMIN_TOKEN: "short" })).toThrow("ADMIN_TOKEN must be at least");
    expect(() => loadConfig({ ADMIN_PORT: "8000", ADMIN_TOKEN: token })).toThrow(
      "PORT, METRICS_PORT, QUERY_PORT and ADMIN_PORT must differ",
    );
    // with a server too; not on a cluster, which `ingest forget` does not reach yet
    expect(loadConfig({ ADMIN_PORT: "9000", ADMIN_TOKEN: token, CLICKHOUSE_URL: "http://ch:8123" }).adminPort).toBe(
      9000,
    );
    expect(() =>
      loadConfig({
        ADMIN_PORT: "9000",
        ADMIN_TOKEN: token,
        CLICKHOUSE_URL: "http://ch:8123",
        CLICKHOUSE_CLUSTER: "analytics",
      }),
    ).toThrow("does not work on a cluster");
  });

  test("the token is never logged, nor shown by the error that refuses a short one", () => {
    const logged = JSON.stringify(redacted(loadConfig({ ADMIN_PORT: "9000", ADMIN_TOKEN: token })));
    expect(logged).not.toContain(token);
    expect(logged).toContain('"adminPort":9000');
    expect(() => loadConfig({ ADMIN_TOKEN: "secret-but-short" })).not.toThrow();
    try {
      loadConfig({ ADMIN_TOKEN: "hunter2" });
      throw new Error("accepted");
    } catch (error) {
      expect((error as Error).message).not.toContain("hunter2");
    }
  });
});
