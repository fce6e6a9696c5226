export {
  type Backup,
  BackupFailed,
  type BackupManifest,
  backupChain,
  backupDatabase,
  type CopyProgress,
  compareVersions,
  destinationProblem,
  incompatibility,
  isEmptyOrMissing,
  isWithin,
  MANIFEST,
  readBackup,
  restoreDatabase,
  serverBackupStatements,
  syncTree,
  type TableStats,
  tableStats,
} from "./backup";
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
export { consistencyOf, createSchema, SchemaError, schemaObjects, sessionsFrom } from "./schema";
export { chunkByBytes, literal, literalList, quoteIdentifier, tableName } from "./sql";
export { tuneEmbeddedEngine } from "./tuning";
export { isDiskLow, readUsage, type StorageUsage } from "./usage";
