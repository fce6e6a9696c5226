import { type ClickHouseConfig, DEFAULTS } from "../config";
import { fail } from "../errors";
import type { CapturedEvent, EventSink } from "../event";
import { ClickHouse, isDataError } from "./clickhouse";
import { GroupCommit } from "./group-commit";
import {
  type CacheObserver,
  DEFAULT_IDENTITY_OPTIONS,
  type IdentityOptions,
  IdentityResolver,
  type Preloaded,
} from "./identity";
import { createSchema, eventInserts, eventRow } from "./schema";

export { SchemaError } from "./schema";

export interface StorageOptions {
  /** Unset ones take `DEFAULT_IDENTITY_OPTIONS`, except `soleWriter`: embedded, chDB locks the data directory
   * to this process, so it is the only writer; on a server, other instances may write too. */
  readonly identity?: Partial<IdentityOptions>;
  /** Most events one flush writes; concurrent requests are coalesced up to this. */
  readonly maxFlushEvents?: number;
  /** Most events waiting for a flush; past it `ingest` refuses with a retryable 503 (a batch is always taken when none wait). */
  readonly maxQueuedEvents?: number;
  /** Most milliseconds a flush waits for the requests the previous one answered (`GroupCommitOptions.lingerMs`); 0 by default. */
  readonly flushLingerMs?: number;
  readonly observer?: StorageObserver;
}

/** Where a flush's time went, in seconds: resolving identity, then each insert. */
export type FlushPhases = Readonly<Record<"identity" | "persons" | "links" | "events", number>>;

/** What the storage tells the outside about its writes (logs, metrics). */
export interface StorageObserver {
  flushed(events: number, seconds: number, phases: FlushPhases): void;
  flushFailed(events: number, seconds: number, error: unknown): void;
  cacheLookups: CacheObserver;
  /** At startup, a sole writer read the links and persons it could hold into its caches. */
  preloaded(preloaded: Preloaded): void;
  /** A missing column was added at startup. */
  schemaRepaired(table: string, column: string, type: string): void;
}

/**
 * The event sink that owns everything in ClickHouse: the schema, identity resolution and the inserts. Writes go
 * through one group commit, so there is a single writer per process however many requests arrive at once.
 */
export class Storage implements EventSink {
  readonly #db: ClickHouse;
  readonly #identity: IdentityResolver;
  readonly #commits: GroupCommit<CapturedEvent>;
  readonly #observer: StorageObserver | undefined;
  readonly #maxQueuedEvents: number;
  #closed = false;

  private constructor(db: ClickHouse, options: StorageOptions) {
    const identity: IdentityOptions = {
      ...DEFAULT_IDENTITY_OPTIONS,
      soleWriter: db.backend === "embedded",
      ...options.identity,
    };
    this.#db = db;
    this.#observer = options.observer;
    this.#maxQueuedEvents = options.maxQueuedEvents ?? Number.POSITIVE_INFINITY;
    this.#identity = new IdentityResolver(db, identity, options.observer?.cacheLookups);
    this.#commits = new GroupCommit((events) => this.#write(events), {
      maxItems: options.maxFlushEvents ?? DEFAULTS.maxFlushEvents,
      isolates: isDataError,
      lingerMs: options.flushLingerMs ?? 0,
    });
  }

  /** Connects, creates the schema if it is missing, and (a sole writer) reads the links it can hold. */
  static async open(config: ClickHouseConfig, options: StorageOptions = {}): Promise<Storage> {
    const db = await ClickHouse.connect(config);
    try {
      await createSchema(db, options.observer?.schemaRepaired);
      const storage = new Storage(db, options);
      const preloaded = await storage.#identity.preload();
      options.observer?.preloaded(preloaded);
      return storage;
    } catch (error) {
      await db.close();
      throw error;
    }
  }

  /** Settles once the events, their persons and distinct IDs are all in ClickHouse (or the write failed). */
  ingest(events: readonly CapturedEvent[]): Promise<void> {
    if (this.#closed) return Promise.reject(fail.unavailable("The service is shutting down; retry shortly", 5));
    if (events.length === 0) return Promise.resolve();
    const queued = this.#commits.queuedItems;
    if (queued > 0 && queued + events.length > this.#maxQueuedEvents) {
      // Memory stays bounded however many requests wait; SDKs retry a 503 after the pause it names.
      return Promise.reject(fail.busy());
    }
    return this.#commits.submit(events);
  }

  /** Events accepted and waiting for a flush to take them. */
  get queuedEvents(): number {
    return this.#commits.queuedItems;
  }

  /**
   * Active parts of each table this service writes. Every flush adds a part to `events` and `sessions`, and merges
   * join them; a count that keeps growing means merges are falling behind (ClickHouse slows inserts down at 1,000
   * parts in a partition and refuses them at 3,000).
   */
  async activeParts(): Promise<Record<string, number>> {
    const rows = await this.#db.rows<{ table: string; parts: string }>(
      "SELECT table, count() AS parts FROM system.parts WHERE active AND database = {database:String} GROUP BY table",
      { database: this.#db.database },
    );
    return Object.fromEntries(rows.map((row) => [row.table, Number(row.parts)]));
  }

  /** Waits for every accepted write to finish, then disconnects. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#commits.drain();
    await this.#db.close();
  }

  /**
   * Persons and links go in before the events that point to them. A failure part-way leaves nothing a retry
   * cannot finish: the retry resolves again from what ClickHouse holds and writes the same result.
   */
  async #write(events: readonly CapturedEvent[]): Promise<void> {
    const started = performance.now();
    let phases: FlushPhases;
    try {
      phases = await this.#resolveAndInsert(events);
    } catch (error) {
      this.#observer?.flushFailed(events.length, (performance.now() - started) / 1000, error);
      throw error;
    }
    this.#observer?.flushed(events.length, (performance.now() - started) / 1000, phases);
  }

  async #resolveAndInsert(events: readonly CapturedEvent[]): Promise<FlushPhases> {
    const timer = phaseTimer();
    const resolution = await this.#identity.resolve(events);
    const identity = timer();
    let phases: FlushPhases;
    try {
      await this.#db.insert("persons", resolution.persons);
      const persons = timer();
      await this.#db.insert("person_distinct_ids", resolution.distinctIds);
      const links = timer();
      const rows = events.map((event, index) => eventRow(event, resolution.personIds[index]!));
      for (const insert of eventInserts(rows)) await this.#db.insert("events", insert);
      phases = { identity, persons, links, events: timer() };
    } catch (error) {
      resolution.abandon();
      throw error;
    }
    resolution.commit();
    return phases;
  }
}

/** Seconds since the previous call (or since it was made). */
function phaseTimer(): () => number {
  let last = performance.now();
  return () => {
    const now = performance.now();
    const seconds = (now - last) / 1000;
    last = now;
    return seconds;
  };
}
