export { ClickHouse, type ClickHouseSettings, isDataError } from "./clickhouse";
export { createSchema, SchemaError } from "./schema";
export { literal, quoteIdentifier, tableName } from "./sql";
export { tuneEmbeddedEngine } from "./tuning";
