import { mkdirSync } from "node:fs";
import { type ClickHouseClient, type ClickHouseClientConfigOptions, createClient } from "@clickhouse/client";
import { createChdbConnection } from "chdb/connection";
import type { ClickHouseConfig } from "../config";

/** Bound parameter lists are split so a query's URL (HTTP) or bound value (chDB) stays small. */
const IN_LIST_CHUNK = 1_000;

/**
 * The one handle on ClickHouse: the same @clickhouse/client code over HTTP to a server, or over chDB
 * in this process. Tables are always named with their database, so nothing depends on a session default.
 */
export class ClickHouse {
  private constructor(
    private readonly client: ClickHouseClient,
    readonly database: string,
    readonly backend: ClickHouseConfig["kind"],
  ) {}

  static connect(config: ClickHouseConfig): ClickHouse {
    if (config.kind === "server") {
      const client = createClient({ url: config.url, username: config.user, password: config.password });
      return new ClickHouse(client, config.database, "server");
    }
    // chDB binds one data directory per process; connections to the same directory share the engine.
    mkdirSync(config.dataDir, { recursive: true });
    // The client declares the Connection contract from its own bundled copy of client-common, chDB from the
    // package; they are the same shape but TypeScript tells the copies apart.
    const connection = createChdbConnection({ path: config.dataDir }) as unknown as NonNullable<
      ClickHouseClientConfigOptions["connection"]
    >;
    const client = createClient({ connection });
    return new ClickHouse(client, config.database, "embedded");
  }

  /** `database`.`name`, quoted. */
  table(name: string): string {
    return `\`${this.database}\`.\`${name}\``;
  }

  async command(query: string): Promise<void> {
    await this.client.command({ query });
  }

  async rows<Row>(query: string, params: Record<string, unknown> = {}): Promise<Row[]> {
    const result = await this.client.query({ query, query_params: params, format: "JSONEachRow" });
    return result.json<Row>();
  }

  /** Runs `query` once per chunk of `values`, bound as the Array parameter `{name:Array(type)}`, and joins the rows. */
  async rowsIn<Row>(query: string, name: string, values: readonly string[]): Promise<Row[]> {
    const rows: Row[] = [];
    for (let start = 0; start < values.length; start += IN_LIST_CHUNK) {
      rows.push(...(await this.rows<Row>(query, { [name]: values.slice(start, start + IN_LIST_CHUNK) })));
    }
    return rows;
  }

  async insert(table: string, values: readonly object[]): Promise<void> {
    if (values.length === 0) return;
    await this.client.insert({ table: this.table(table), values: values as object[], format: "JSONEachRow" });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
