import type { ClickHouseConfig, Config } from "../config";
import type { IdentityOptions } from "../identity";
import type { SchemaOptions } from "../storage";
import { REPAIR_BATCH_IDS, REPAIR_SETTLE_MS } from "./repair";
import type { SettleOptions } from "./settle";
import type { SquashOptions } from "./squash";

export interface StorageOptions {
  readonly clickhouse: ClickHouseConfig;
  /** Most events one flush writes; concurrent requests are coalesced up to this. */
  readonly maxFlushEvents: number;
  /** Most events waiting for a flush; past it `ingest` refuses with a retryable 503 (a batch is always taken when none wait). */
  readonly maxQueuedEvents: number;
  /** Most milliseconds a flush waits for the requests the previous one answered (`GroupCommitOptions.lingerMs`). */
  readonly flushLingerMs: number;
  readonly identity: IdentityOptions;
  /** Milliseconds between repair sweeps (`REPAIR_INTERVAL_S`); 0: only the one at startup. */
  readonly repairIntervalMs: number;
  /** Most distinct IDs a repair sweep re-derives (the next goes on from there). */
  readonly repairBatchIds: number;
  /** Facts younger than this (milliseconds) are left to a later repair sweep: their flush may still be writing. */
  readonly repairSettleMs: number;
  /** When merges are squashed (`SQUASH_INTERVAL_S`, `SQUASH_GRACE_S`). */
  readonly squash: SquashOptions;
  /** When days of events are settled into one part (`SETTLE_AFTER_S`). */
  readonly settle: SettleOptions;
  /** The materialized columns `events` has: `properties_typed`, property and person property columns. */
  readonly schema: SchemaOptions;
  /** Days events and sessions are kept (`EVENTS_RETENTION_DAYS`); none: every one. */
  readonly retentionDays: number | undefined;
  /** `DISK_WARN_PERCENT`: warn while the tables' disk has less free (0: never). */
  readonly diskWarnPercent: number;
  /** `PERSONS_ON_EVENTS`: each event's row carries its person's properties and creation time. */
  readonly personsOnEvents: boolean;
  /** `BACKUP_DIR`: where the embedded engine may write backups (`backup`); none: nowhere. */
  readonly backupDir?: string | undefined;
}

/**
 * The storage's options as the configuration sets them. Embedded, chDB locks the data directory to this process,
 * so it is the only writer of its tables, unless its query port takes writes (`QUERY_READONLY=0`): then other
 * instances may write through it, as they may on a server, and it writes as one of several.
 */
export function storageOptions(config: Config): StorageOptions {
  return {
    clickhouse: config.clickhouse,
    maxFlushEvents: config.maxFlushEvents,
    maxQueuedEvents: config.maxQueuedEvents,
    flushLingerMs: config.flushLingerMs,
    repairIntervalMs: config.repairIntervalS * 1000,
    repairBatchIds: REPAIR_BATCH_IDS,
    repairSettleMs: REPAIR_SETTLE_MS,
    squash: { intervalMs: config.squashIntervalS * 1000, graceMs: config.squashGraceS * 1000 },
    settle: { afterMs: config.settleAfterS * 1000 },
    schema: {
      typedProperties: config.typedProperties,
      materializedProperties: config.materializedProperties,
      materializedPersonProperties: config.materializedPersonProperties,
    },
    retentionDays: config.eventsRetentionDays,
    diskWarnPercent: config.diskWarnPercent,
    personsOnEvents: config.personsOnEvents,
    backupDir: config.backupDir,
    identity: {
      soleWriter: config.clickhouse.kind === "embedded" && (config.queryPort === undefined || config.queryReadonly),
      cacheTtlMs: config.linkCacheTtlMs,
      automaticProperties: config.personAutoProperties,
      creatorEvent: config.personCreatorEvent,
      cacheCapacity: config.linkCacheEntries,
      personCacheBytes: config.personCacheMiB * 2 ** 20,
    },
  };
}
