import { mkdirSync } from "node:fs";
import type { CapturedEvent, EventSink } from "../contract";
import { fail } from "../contract";
import { deriveGroups, fillOverrides, groupFactsOf, IdentityResolver, stamped } from "../identity";
import {
  applyRetention,
  type BackupManifest,
  backupDatabase,
  ClickHouse,
  type CopyProgress,
  consistencyOf,
  createSchema,
  type Hold,
  isDataError,
  readUsage,
  refusalOf,
  type StorageUsage,
  tuneEmbeddedEngine,
} from "../storage";
import type { BackupRequest, FlushPhases, ForgetOutcome, IdentityRows, StorageObserver } from "../telemetry";
import { DISK_WATCH, DiskWatch } from "./disk-watch";
import { planErasure } from "./erasure-plan";
import { finishErasure, startErasure } from "./forget";
import { Gate } from "./gate";
import { GroupCommit } from "./group-commit";
import type { StorageOptions } from "./options";
import { Periodic } from "./periodic";
import { PersonsOnEvents } from "./persons-on-events";
import { phaseTimer, timed } from "./phase-timer";
import { RepairSweep } from "./repair";
import { type EventRow, eventInserts, eventRow } from "./rows";
import { settleDue, settleIntervalMs } from "./settle";
import { squashAged } from "./squash";

/**
 * The event sink that owns everything in ClickHouse: the schema, identity resolution and the inserts. Writes go
 * through one group commit, so there is a single writer per process however many requests arrive at once.
 */
export class Storage implements EventSink {
  readonly #db: ClickHouse;
  /**
   * Where events are inserted, a flush on each in turn: on the embedded engine, two sessions of their own, since the
   * engine runs one query at a time per session and the events insert is most of a flush. So a flush's insert
   * starts at once, beside the previous flush's on the other (at most two flushes are in flight, `GroupCommit`);
   * a server takes concurrent inserts on one client.
   */
  readonly #eventLanes: readonly EventLane[];
  #eventTurn = 0;
  readonly #identity: IdentityResolver;
  readonly #repairs: RepairSweep;
  readonly #squashes: Periodic;
  /** Settles days of events (`settle.ts`) on a session of its own: an `OPTIMIZE` holds its session while it merges. */
  readonly #settles: Periodic;
  readonly #settleDb: ClickHouse;
  readonly #disk: DiskWatch;
  readonly #personsOnEvents: PersonsOnEvents | undefined;
  readonly #commits: GroupCommit<CapturedEvent>;
  readonly #observer: StorageObserver | undefined;
  readonly #maxQueuedEvents: number;
  /** Flushes and repair sweeps share it; a forget takes it alone (`forget`). */
  readonly #gate = new Gate();
  /** Forgets waiting for their events and sessions to be deleted, which `close` lets finish. */
  readonly #finishing = new Set<Promise<unknown>>();
  /** Events of every flush written whole so far: what a backup reports as ingested while it copies. */
  #eventsStored = 0;
  #closed = false;

  private constructor(
    db: ClickHouse,
    eventsDbs: readonly ClickHouse[],
    settleDb: ClickHouse,
    options: StorageOptions,
    observer: StorageObserver | undefined,
  ) {
    this.#db = db;
    this.#eventLanes = eventsDbs.map((eventsDb) => ({ db: eventsDb, inserted: Promise.resolve() }));
    this.#settleDb = settleDb;
    this.#observer = observer;
    this.#maxQueuedEvents = options.maxQueuedEvents;
    this.#identity = new IdentityResolver(db, options.identity, observer?.cacheLookups);
    this.#repairs = new RepairSweep(
      db,
      this.#identity,
      {
        intervalMs: options.repairIntervalMs,
        soleWriter: options.identity.soleWriter,
        batchIds: options.repairBatchIds,
        settleMs: options.repairSettleMs,
      },
      observer,
      this.#gate,
    );
    this.#squashes = new Periodic(
      options.squash.intervalMs,
      () => squashAged(db, options.squash.graceMs, observer),
      (error) => observer?.squashFailed(error),
    );
    this.#settles = new Periodic(
      settleIntervalMs(options.settle),
      () => settleDue(settleDb, options.settle, observer),
      (error) => observer?.settleFailed(error),
    );
    this.#personsOnEvents = options.personsOnEvents
      ? new PersonsOnEvents(db, {
          ttlMs: options.identity.soleWriter ? 0 : options.identity.cacheTtlMs,
          maxBytes: options.identity.personCacheBytes,
        })
      : undefined;
    this.#disk = new DiskWatch(() => this.usage(), { ...DISK_WATCH, percent: options.diskWarnPercent }, observer);
    this.#commits = new GroupCommit((events, release) => this.#gate.shared(() => this.#write(events, release)), {
      maxItems: options.maxFlushEvents,
      isolates: isDataError,
      lingerMs: options.flushLingerMs,
    });
  }

  /**
   * Connects, creates the schema if it is missing, applies the retention (and tunes the embedded engine), and
   * (a sole writer) reads the links it can hold. The observer, if any, is told of writes, cache lookups, startup
   * repairs and what the retention changed.
   */
  static async open(options: StorageOptions, observer?: StorageObserver): Promise<Storage> {
    const { backupDir } = options;
    if (backupDir !== undefined) mkdirSync(backupDir, { recursive: true });
    const db = await ClickHouse.connect(options.clickhouse, backupDir === undefined ? {} : { backupsDir: backupDir });
    const eventsDbs: ClickHouse[] = []; // embedded: sessions of their own (a server takes concurrent inserts)
    let settleDb = db;
    try {
      await createSchema(
        db,
        observer?.schemaRepaired,
        options.schema,
        observer?.schemaRebuilt,
        observer?.schemaViewReplaced,
      );
      db.setConsistency(await consistencyOf(db));
      for (const change of await applyRetention(db, options.retentionDays)) observer?.retained(change);
      if (options.clickhouse.kind === "embedded") {
        await tuneEmbeddedEngine(db, options.clickhouse.fsync);
        for (let lane = 0; lane < 2; lane++) eventsDbs.push(await ClickHouse.connect(options.clickhouse));
        settleDb = await ClickHouse.connect(options.clickhouse);
      }
      await fillOverrides(db); // a database written before person_overrides existed
      const storage = new Storage(db, eventsDbs.length > 0 ? eventsDbs : [db, db], settleDb, options, observer);
      // the repair first: the links a sole writer then preloads are the repaired ones
      await storage.#repairs.start();
      storage.#squashes.start();
      storage.#settles.start();
      storage.#disk.start();
      try {
        // not an argument of `observer?.`: an absent observer would skip it (the import in process has none)
        const preloaded = await storage.#identity.preload();
        observer?.preloaded(preloaded);
      } catch (error) {
        await storage.#repairs.stop();
        await storage.#squashes.stop();
        await storage.#settles.stop();
        storage.#disk.stop();
        throw error;
      }
      return storage;
    } catch (error) {
      for (const eventsDb of eventsDbs) await eventsDb.close();
      if (settleDb !== db) await settleDb.close();
      await db.close();
      throw error;
    }
  }

  /** Settles once the events, their persons and distinct IDs are all in ClickHouse (or the write failed). */
  ingest(events: readonly CapturedEvent[]): Promise<void> {
    if (this.#closed) return Promise.reject(fail.shuttingDown());
    if (events.length === 0) return Promise.resolve();
    const queued = this.#commits.queuedItems;
    if (queued > 0 && queued + events.length > this.#maxQueuedEvents) {
      // Memory stays bounded however many requests wait; SDKs retry a 503 after the pause it names.
      return Promise.reject(fail.busy());
    }
    return this.#commits.submit(events).catch((error: unknown) => {
      const refusal = refusalOf(error);
      throw refusal === undefined ? error : fail.storageRefused(refusal.table, refusal.type, error);
    });
  }

  /** Events accepted and waiting for a flush to take them. */
  get queuedEvents(): number {
    return this.#commits.queuedItems;
  }

  /**
   * The tables' active parts and bytes, and the room left on their disk. Every flush adds a part to `events` and
   * `sessions`, and merges join them; a count that keeps growing means merges are falling behind (ClickHouse slows
   * inserts down at 1,000 parts in a partition and refuses them at 3,000).
   */
  usage(): Promise<StorageUsage> {
    return readUsage(this.#db);
  }

  /**
   * `ingest forget` through the running service (docs/operations.md#forgetting-persons): finds the persons of
   * `distinctIds`, registers the deletes of their events and sessions and deletes their identity rows while no
   * flush or repair sweep runs (they wait: ingest pauses that long), and drops what the caches hold of them, so
   * that their next event makes a new person from its own facts alone. Then, flushes going on, waits for the
   * events and sessions to be deleted.
   */
  async forget(distinctIds: readonly string[]): Promise<ForgetOutcome> {
    const pending = await this.#gate.exclusive(async () => {
      const started = performance.now();
      const erasure = await planErasure(this.#db, distinctIds);
      if ("unknown" in erasure) return erasure;
      try {
        return await startErasure(this.#db, erasure, started);
      } finally {
        // after a failure part-way too: a cached person may hold facts the table no longer has
        this.#identity.forget(erasure.ids);
        this.#personsOnEvents?.forget(erasure.personIds);
      }
    });
    if ("unknown" in pending) return pending;
    const finished = finishErasure(this.#db, pending);
    this.#finishing.add(finished);
    try {
      return { forgotten: await finished };
    } finally {
      this.#finishing.delete(finished);
    }
  }

  /**
   * `ingest backup` through the running service (docs/operations.md#backup-and-restore): the database into `dest`,
   * directly in `BACKUP_DIR` (on `base`; the engine reading at most `bandwidth` bytes a second), with flushes and
   * repair sweeps held until the engine has taken every table's parts (`backupDatabase`), so that every table is
   * copied as of one moment between flushes. `paused`: seconds from asking for the hold (flushes under way finish
   * first, none starts) to its release. `onProgress` is told how the copy goes, with the events stored since the
   * hold ended (`CopyProgress.ingested`).
   */
  async backup(
    { dest, base, bandwidth }: BackupRequest,
    onProgress: (progress: CopyProgress) => void = () => {},
  ): Promise<{ manifest: BackupManifest; paused: number }> {
    let paused = 0;
    let storedAtRelease: number | undefined;
    const hold: Hold = async (copy) => {
      const asked = performance.now();
      try {
        return await this.#gate.exclusive(copy);
      } finally {
        paused = (performance.now() - asked) / 1000;
        storedAtRelease = this.#eventsStored; // no flush has finished since: none could start before now
      }
    };
    const progress = (copied: CopyProgress) =>
      onProgress({ ...copied, ingested: this.#eventsStored - (storedAtRelease ?? this.#eventsStored) });
    const manifest = await backupDatabase(this.#db, dest, { base, bandwidth, onProgress: progress, hold });
    return { manifest, paused };
  }

  /** Waits for every accepted write (and a forget under way) to finish, then disconnects. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#disk.stop();
    await this.#repairs.stop();
    await this.#squashes.stop();
    await this.#settles.stop();
    await this.#commits.drain();
    await this.#gate.exclusive(async () => {});
    await Promise.allSettled(this.#finishing);
    for (const { db } of this.#eventLanes) if (db !== this.#db) await db.close();
    if (this.#settleDb !== this.#db) await this.#settleDb.close();
    await this.#db.close();
  }

  /**
   * Facts go in first, then the persons derived from them, then at once the links and the events that point to
   * those persons: whatever a failure part-way leaves, no link or event points to a person not stored. Nothing
   * a retry cannot finish either: the retry writes its facts again (a fact written twice says nothing new) and
   * derives the same persons and links from them (docs/scale-out.md). Once the links are in, the next flush may
   * begin while this one's events are still going in (`release`).
   */
  async #write(events: readonly CapturedEvent[], release: () => void): Promise<void> {
    const started = performance.now();
    let written: { phases: FlushPhases; rows: IdentityRows };
    try {
      written = await this.#resolveAndInsert(events, release);
    } catch (error) {
      this.#observer?.flushFailed(events.length, (performance.now() - started) / 1000, error);
      const refusal = refusalOf(error);
      if (refusal !== undefined) this.#observer?.storageRefused(refusal);
      throw error;
    }
    this.#eventsStored += events.length;
    this.#observer?.flushed(events.length, (performance.now() - started) / 1000, written.phases, written.rows);
  }

  async #resolveAndInsert(
    events: readonly CapturedEvent[],
    release: () => void,
  ): Promise<{ phases: FlushPhases; rows: IdentityRows }> {
    const timer = phaseTimer();
    const prepared = await this.#identity.prepare(events);
    let identity = timer();
    const factsAt = new Date();
    const groupFacts = groupFactsOf(events);
    let inserted: Promise<number> | undefined;
    let committed = false;
    try {
      await this.#db.insert("identity_facts", stamped(prepared.facts, factsAt));
      await this.#db.insert("group_facts", groupFacts);
      const facts = timer();
      const resolution = await this.#identity.resolve(prepared);
      identity += timer();
      const onEvents = await this.#personsOnEvents?.of(resolution.personIds, resolution.persons);
      const rows = events.map((event, index) => {
        const personId = resolution.personIds[index]!;
        return eventRow(event, personId, onEvents?.get(personId));
      });
      await this.#db.insert("persons", resolution.persons);
      const groups = await deriveGroups(this.#db, groupFacts);
      await this.#db.insert("groups", groups);
      // after the persons: an override always names a stored person
      await this.#db.insert("person_overrides", stamped(resolution.overrides));
      const persons = timer();
      inserted = this.#insertEvents(rows);
      await this.#db.insert("person_distinct_ids", resolution.distinctIds);
      const links = timer();
      this.#identity.commit(prepared, resolution);
      committed = true;
      release();
      const identityRows: IdentityRows = {
        identity_facts: prepared.facts.length,
        group_facts: groupFacts.length,
        persons: resolution.persons.length,
        groups: groups.length,
        person_overrides: resolution.overrides.length,
        person_distinct_ids: resolution.distinctIds.length,
      };
      return { phases: { identity, facts, persons, links, events: await inserted }, rows: identityRows };
    } catch (error) {
      await inserted?.catch(() => {}); // settled before the flush is: its lane is free for the flush after next
      if (!committed) {
        this.#identity.abandon(prepared);
        if (prepared.facts.length > 0) this.#repairs.failed(factsAt.getTime());
      }
      throw error;
    }
  }

  /**
   * Inserts a flush's events on the next lane, once that lane's last insert is over (one query at a time a
   * session), and says how long its own insert took, in seconds.
   */
  #insertEvents(rows: readonly EventRow[]): Promise<number> {
    const lane = this.#eventLanes[this.#eventTurn++ % this.#eventLanes.length]!;
    const inserted = lane.inserted.then(() =>
      timed(async () => {
        for (const insert of eventInserts(rows)) await lane.db.insert("events", insert);
      }),
    );
    lane.inserted = inserted.catch(() => {});
    return inserted;
  }
}

/** A session events are inserted on, and its last insert, settled. */
interface EventLane {
  readonly db: ClickHouse;
  inserted: Promise<unknown>;
}
