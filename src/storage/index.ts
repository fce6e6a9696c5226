export {
  ClickHouse,
  type ClickHouseSettings,
  type Consistency,
  isDataError,
  type Refusal,
  type Replication,
  refusalOf,
} from "./clickhouse";
export { applyRetention, type RetentionChange } from "./retention";
export { consistencyOf, createSchema, SchemaError, schemaObjects } from "./schema";
export { literal, quoteIdentifier, tableName } from "./sql";
export { tuneEmbeddedEngine } from "./tuning";
export { isDiskLow, readUsage, type StorageUsage } from "./usage";
