import { loadConfig } from "../../src/config";
import type { ClickHouse } from "../../src/storage/clickhouse";
import { literal } from "../../src/storage/sql";
import type { Storage } from "../../src/write";
import { captured } from "./captured";
import { clickhouseEnv, openDb, openStorage } from "./service";

/** The materialized columns of `events` whose names start with `prefix` (`mat_`, `pmat_`), with their expressions. */
export async function columnsNamed(db: ClickHouse, prefix: string): Promise<Record<string, string>> {
  const columns = await db.rows<{ name: string; default_expression: string }>(
    `SELECT name, default_expression FROM system.columns
     WHERE database = ${literal(db.database)} AND table = 'events' AND startsWith(name, ${literal(prefix)}) ORDER BY name`,
  );
  return Object.fromEntries(columns.map((column) => [column.name, column.default_expression]));
}

/**
 * The distinct expressions of a prefix's columns with the key each takes out of the tuple left off (one where every
 * column reads the same tuple), and how many columns there are.
 */
export async function tuplesNamed(db: ClickHouse, prefix: string): Promise<{ columns: number; tuples: string[] }> {
  const expressions = Object.values(await columnsNamed(db, prefix));
  return {
    columns: expressions.length,
    tuples: [...new Set(expressions.map((expression) => expression.replace(/, '[^']*'\)$/, "")))],
  };
}

/** A storage on a database of its own with `env`'s settings, until `check` is done. */
export async function onDatabase(
  database: string,
  env: Record<string, string>,
  check: (storage: Storage, db: ClickHouse) => Promise<void>,
): Promise<void> {
  const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: database, ...env });
  const storage = await openStorage(config);
  const db = await openDb(database);
  try {
    await check(storage, db);
  } finally {
    await storage.close();
    await db.close();
  }
}

/** Writes a batch through a storage, as a request's captured events. */
export const ingestInto = async (storage: Storage, batch: object[]): Promise<void> =>
  storage.ingest((await captured(batch)).events);
