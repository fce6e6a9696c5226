export { ClickHouse, type ClickHouseSettings, isDataError } from "./clickhouse";
export { clusterInsertSettings, createSchema, SchemaError } from "./schema";
export { literal, quoteIdentifier, tableName } from "./sql";
export { tuneEmbeddedEngine } from "./tuning";
