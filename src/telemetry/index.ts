export {
  BACKUP_PROGRESS_TYPE,
  type BackupAnswer,
  type BackupProgress,
  type BackupRequest,
  type BackupThroughService,
} from "./backup";
export {
  type AdminObserver,
  adminObserver,
  FORGOTTEN_TABLES,
  type Forget,
  type ForgetOutcome,
  type ForgetVia,
  type Forgotten,
  type ForgottenTable,
  hashedId,
  logForgotten,
  unknownSentence,
} from "./forget";
export { describeError, Logger } from "./log";
export { Metrics, type ScrapeSources, type Usage } from "./metrics";
export {
  type Answer,
  type CacheObserver,
  type FlushPhases,
  type Handled,
  type IdentityRows,
  type Preloaded,
  type QueryAnswer,
  type QueryObserver,
  type QueryOutcome,
  queryObserver,
  type Repaired,
  type RequestObserver,
  type Route,
  requestObserver,
  type Settled,
  SLOW_FLUSH_SECONDS,
  type Squashed,
  type StorageObserver,
  storageObserver,
} from "./observers";
