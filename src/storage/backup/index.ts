export { destinationProblem, isEmptyOrMissing, isWithin, syncTree, treeBytes } from "./files";
export { type BackupSummary, backupSummary, intoDestination } from "./made";
export {
  type Backup,
  type BackupManifest,
  backupChain,
  compareVersions,
  incompatibility,
  MANIFEST,
  readBackup,
  type TableStats,
} from "./manifest";
export {
  BackupFailed,
  type BackupOptions,
  backupDatabase,
  type CopyProgress,
  type Hold,
  restoreDatabase,
  serverBackupStatements,
  tableStats,
} from "./sql";
