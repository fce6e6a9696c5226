import type { Fsync } from "../config";
import { lowerMergePriority } from "../engine";
import type { ClickHouse } from "./clickhouse";
import { TABLES } from "./schema";

/**
 * The embedded engine's policy for the parts of each table, and for its merge threads. Only the embedded engine
 * is tuned: it is the service's own, while a server's policy is its operator's. Applied at every start, to
 * tables made before too (docs/architecture.md#the-embedded-engine).
 *
 * - Every table is synced as `FSYNC` says (`FSYNC_SETTINGS`), and removes its outdated parts one at a time. Past
 *   100 at once (`concurrent_part_removal_threshold`), the engine removes them on up to 128 threads, each renaming
 *   and deleting part directories in the same table directory, and an insert's own lookups and rename there
 *   waited for that directory's lock.
 * - Every table that takes a part with every flush waits for more parts before a merge rewrites their largest
 *   (`merge_selector_base` 20, default 5). The engine counts every part as at least 5 MiB when it chooses merges,
 *   so parts smaller than that look equal in size, and with the default it merged them as soon as a few had
 *   gathered: a small table was rewritten whole every one or two flushes, and each event far more often than its
 *   part's growth needed (docs/architecture.md#the-embedded-engine).
 * - `events` and `sessions` merge at most 10 parts at a time instead of up to 100: a merge holds read and write
 *   buffers for every column of every part it merges. Fewer at a time rewrote each event more often, and so did
 *   10 with the default base.
 */
export function embeddedTableSettings(fsync: Fsync): Readonly<Record<string, Readonly<Record<string, number>>>> {
  const common = { concurrent_part_removal_threshold: 1_000_000_000, ...FSYNC_SETTINGS[fsync] };
  const own: Readonly<Record<string, Readonly<Record<string, number>>>> = {
    events: WIDER_MERGES,
    sessions: WIDER_MERGES,
    persons: FEWER_REWRITES,
    person_distinct_ids: FEWER_REWRITES,
    identity_facts: FEWER_REWRITES,
  };
  return Object.fromEntries(TABLES.map(({ name }) => [name, { ...common, ...own[name] }]));
}

const FEWER_REWRITES = { merge_selector_base: 20 } as const;
/** For the tables that grow with every event. */
const WIDER_MERGES = { max_parts_to_merge_at_once: 10, ...FEWER_REWRITES } as const;

/**
 * chDB deletes the parts a merge replaced at once (`old_parts_lifetime` 0), where a server keeps them 8 minutes
 * so that a merged part the disk never got can be rebuilt from them after a power loss. So from `merges` up,
 * every merged part is on disk before the parts it replaces go (a journaling filesystem, as ext4 and XFS are by
 * default, commits that deletion after the merged part's rename). `all` also syncs each insert's files and
 * directory before the insert returns, so a 200 survives a power loss (docs/architecture.md#durability).
 */
const FSYNC_SETTINGS: Readonly<Record<Fsync, Readonly<Record<string, number>>>> = {
  none: { min_compressed_bytes_to_fsync_after_merge: 0, fsync_after_insert: 0, fsync_part_directory: 0 },
  merges: { min_compressed_bytes_to_fsync_after_merge: 1, fsync_after_insert: 0, fsync_part_directory: 0 },
  all: { min_compressed_bytes_to_fsync_after_merge: 1, fsync_after_insert: 1, fsync_part_directory: 1 },
};

/** Applies the table settings to the schema's tables (which must exist), and lowers the merge threads' priority. */
export async function tuneEmbeddedEngine(db: ClickHouse, fsync: Fsync): Promise<void> {
  for (const [table, settings] of Object.entries(embeddedTableSettings(fsync))) {
    const assignments = Object.entries(settings).map(([name, value]) => `${name} = ${value}`);
    await db.command(`ALTER TABLE ${db.table(table)} MODIFY SETTING ${assignments.join(", ")}`);
  }
  lowerMergePriority();
}
