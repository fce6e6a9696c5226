import { openGeoIp } from "../../src/capture/geoip";
import { PendingBytes } from "../../src/capture/pending";
import { type Config, loadConfig } from "../../src/config";
import { serve } from "../../src/http";
import type { IdentityOptions } from "../../src/identity";
import { QueryEngine, type QueryEngineOptions, queryEngineOptions, serveQuery } from "../../src/query";
import { ClickHouse } from "../../src/storage/clickhouse";
import type { QueryAnswer, StorageObserver } from "../../src/telemetry";
import { Storage, storageOptions } from "../../src/write";

/** The ClickHouse settings every test uses: the server named by CLICKHOUSE_URL, or this process's chDB. */
export function clickhouseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["CLICKHOUSE_URL", "CLICKHOUSE_USER", "CLICKHOUSE_PASSWORD"]) {
    const value = process.env[name];
    if (value) env[name] = value;
  }
  if (!env.CLICKHOUSE_URL) env.DATA_DIR = process.env.TEST_DATA_DIR!;
  return env;
}

let databases = 0;
export function uniqueDatabase(): string {
  return `test_${process.pid}_${Date.now().toString(36)}_${databases++}`;
}

/** A handle of the test's own on the database the service writes to, for reading rows back and for faults. */
export function openDb(database: string): Promise<ClickHouse> {
  return ClickHouse.connect(loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: database }).clickhouse);
}

/** What a test may set beyond the configuration. */
export interface StorageSeams {
  /** Identity options over the configured ones: caches of a few bytes, or the embedded engine as one of several writers. */
  readonly identity?: Partial<IdentityOptions>;
  readonly observer?: StorageObserver;
  /** Most distinct IDs a repair sweep takes: a small batch makes a backlog of a few. */
  readonly repairBatchIds?: number;
  /** Milliseconds between repair sweeps, and how old facts must be for one: shorter than the configuration allows. */
  readonly repairIntervalMs?: number;
  readonly repairSettleMs?: number;
}

/** A storage as the service opens it from `config`, with the test's seams. */
export function openStorage(
  config: Config,
  { identity, observer, repairBatchIds, repairIntervalMs, repairSettleMs }: StorageSeams = {},
): Promise<Storage> {
  const options = storageOptions(config);
  return Storage.open(
    {
      ...options,
      identity: { ...options.identity, ...identity },
      repairBatchIds: repairBatchIds ?? options.repairBatchIds,
      repairIntervalMs: repairIntervalMs ?? options.repairIntervalMs,
      repairSettleMs: repairSettleMs ?? options.repairSettleMs,
    },
    observer,
  );
}

/** The query port of a test service, and what its observer was told. */
export interface TestQueryPort {
  readonly url: string;
  readonly engine: QueryEngine;
  readonly answers: QueryAnswer[];
  /** Fetches `path` on the port with the configured credentials (basic auth), unless `auth` is false. */
  fetch(path: string, init?: RequestInit & { auth?: boolean }): Promise<Response>;
}

export interface TestService {
  readonly url: string;
  /** Present when `QUERY_PORT` is set (use "0"; `QUERY_PASSWORD` is then "test-password" unless given). */
  readonly query: TestQueryPort | undefined;
  readonly config: Config;
  readonly storage: Storage;
  readonly db: ClickHouse;
  /** Stops the server and closes the storage; `drop` also removes the database. */
  stop(options?: { drop?: boolean }): Promise<void>;
}

/** A real server on a free local port, on its own database unless `env` names one. */
export async function startService(
  env: Record<string, string> = {},
  seams: StorageSeams & { readonly query?: Partial<QueryEngineOptions> } = {},
): Promise<TestService> {
  const config = loadConfig({
    ...clickhouseEnv(),
    HOST: "127.0.0.1",
    PORT: "0",
    CLICKHOUSE_DATABASE: uniqueDatabase(),
    ...(env.QUERY_PORT !== undefined && { QUERY_PASSWORD: "test-password" }),
    ...env,
  });
  const storage = await openStorage(config, seams);
  const server = serve({
    config,
    sink: storage,
    pending: new PendingBytes(config.maxPendingBytes),
    geo: await openGeoIp(config),
  });
  const query = config.queryPort === undefined ? undefined : await startQueryPort(config, seams.query);
  const db = await openDb(config.clickhouse.database);
  return {
    url: server.url.href.replace(/\/$/, ""),
    query,
    config,
    storage,
    db,
    async stop({ drop = true } = {}) {
      await server.stop(true);
      await query?.stop();
      await storage.close();
      if (drop) await db.command(`DROP DATABASE IF EXISTS \`${config.clickhouse.database}\``);
      await db.close();
    },
  };
}

async function startQueryPort(
  config: Config,
  options: Partial<QueryEngineOptions> = {},
): Promise<TestQueryPort & { stop(): Promise<void> }> {
  const engine = await QueryEngine.open({ ...queryEngineOptions(config), ...options });
  const answers: QueryAnswer[] = [];
  const credentials = { user: config.queryUser, password: config.queryPassword };
  const server = serveQuery(config, {
    engine,
    credentials,
    readonly: config.queryReadonly,
    displayName: "test-host",
    observer: { answered: (answer) => answers.push(answer) },
  })!;
  const url = server.url.href.replace(/\/$/, "");
  return {
    url,
    engine,
    answers,
    fetch(path, { auth = true, ...init } = {}) {
      const headers = new Headers(init.headers);
      if (auth) headers.set("authorization", `Basic ${btoa(`${credentials.user}:${credentials.password}`)}`);
      return fetch(`${url}${path}`, { ...init, headers });
    },
    async stop() {
      await server.stop(true);
      await engine.close();
    },
  };
}

export interface Sent {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

export interface SendOptions {
  readonly headers?: Record<string, string>;
  readonly gzip?: boolean;
  readonly path?: string;
  readonly method?: string;
}

/** POSTs a JSON value (or raw text/bytes) to /batch/ and reads the JSON answer. */
export async function send(service: TestService, body: unknown, options: SendOptions = {}): Promise<Sent> {
  const raw: string | Uint8Array<ArrayBuffer> =
    typeof body === "string" || body instanceof Uint8Array
      ? (body as string | Uint8Array<ArrayBuffer>)
      : JSON.stringify(body);
  const payload = options.gzip ? Bun.gzipSync(raw) : raw;
  const headers: Record<string, string> = { "content-type": "application/json", ...options.headers };
  if (options.gzip) headers["content-encoding"] ??= "gzip";
  const response = await fetch(`${service.url}${options.path ?? "/batch/"}`, {
    method: options.method ?? "POST",
    headers,
    body: payload,
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}
