export {
  type Backup,
  BackupFailed,
  type BackupManifest,
  type BackupSummary,
  backupChain,
  backupDatabase,
  backupSummary,
  type CopyProgress,
  compareVersions,
  destinationProblem,
  type Hold,
  incompatibility,
  intoDestination,
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
export {
  consistencyOf,
  createSchema,
  eventPartition,
  onClusterClause,
  SchemaError,
  type SchemaOptions,
  schemaObjects,
  sessionsFrom,
} from "./schema";
export { chunkByBytes, literal, literalList, quoteIdentifier, tableName } from "./sql";
export { tuneEmbeddedEngine } from "./tuning";
export { isDiskLow, readUsage, type StorageUsage } from "./usage";
