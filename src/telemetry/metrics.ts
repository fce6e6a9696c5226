import { Counter, Gauge, Histogram, Registry } from "prom-client";

const SIZE_BUCKETS = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 25_000, 100_000];
const SECONDS_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const QUERY_SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** How a scrape reads the storage's usage (`Metrics.sampleUsage`). */
export interface PartsReadOptions {
  /** Scrapes within this long of the last read reuse it. */
  readonly intervalMs: number;
  /** Longest a scrape waits for a read. */
  readonly waitMs: number;
}

const PARTS_READ: PartsReadOptions = { intervalMs: 1000, waitMs: 1000 };

/** The tables' parts and bytes, and the room left on their disk (storage/usage.ts reads them). */
export interface Usage {
  readonly tables: Readonly<Record<string, { readonly parts: number; readonly bytes: number }>>;
  readonly disk?: { readonly name: string; readonly freeBytes: number; readonly totalBytes: number };
}

/** The state a scrape reads into the gauges. */
export interface ScrapeSources {
  readonly queuedEvents: () => number;
  readonly pendingBytes: () => number;
  readonly usage: () => Promise<Usage>;
  /** Queries running on the query port, when it is on. */
  readonly runningQueries?: () => number;
}

/** The service's Prometheus metrics, each in a registry of its own (so several services in a test do not mix). */
export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: "ingest_requests_total",
    help: "HTTP requests answered, by route and status",
    labelNames: ["route", "status"] as const,
    registers: [this.registry],
  });
  readonly eventsIngested = new Counter({
    name: "ingest_events_ingested_total",
    help: "Events accepted and stored",
    registers: [this.registry],
  });
  readonly eventsDropped = new Counter({
    name: "ingest_events_dropped_total",
    help: "Events dropped for a missing name or distinct ID",
    registers: [this.registry],
  });
  readonly batchSize = new Histogram({
    name: "ingest_batch_events",
    help: "Items per accepted batch request",
    buckets: SIZE_BUCKETS,
    registers: [this.registry],
  });
  readonly flushSize = new Histogram({
    name: "ingest_flush_events",
    help: "Events per write to ClickHouse (a flush coalesces concurrent requests)",
    buckets: SIZE_BUCKETS,
    registers: [this.registry],
  });
  readonly flushSeconds = new Histogram({
    name: "ingest_flush_duration_seconds",
    help: "Time per flush: identity resolution and every insert",
    buckets: SECONDS_BUCKETS,
    registers: [this.registry],
  });
  readonly flushPhaseSeconds = new Histogram({
    name: "ingest_flush_phase_seconds",
    help: "Time per flush by phase: identity (resolution), facts, persons, links and events (each insert)",
    labelNames: ["phase"] as const,
    buckets: SECONDS_BUCKETS,
    registers: [this.registry],
  });
  readonly rowsWritten = new Counter({
    name: "ingest_rows_written_total",
    help: "Rows flushes inserted into each identity and group table (identity_facts, persons, person_distinct_ids, person_overrides, group_facts, groups)",
    labelNames: ["table"] as const,
    registers: [this.registry],
  });
  readonly insertErrors = new Counter({
    name: "ingest_insert_errors_total",
    help: "Flushes that failed to write",
    registers: [this.registry],
  });
  readonly storageRefusals = new Counter({
    name: "ingest_storage_refusals_total",
    help: "Flushes a table refused for what it is (a constraint, a column, a table missing), by table and ClickHouse error: an operator must fix the table",
    labelNames: ["table", "error"] as const,
    registers: [this.registry],
  });
  readonly cacheLookups = new Counter({
    name: "ingest_identity_cache_lookups_total",
    help: "Identity cache lookups, by kind (links, persons) and result (hit, miss): a miss is read from ClickHouse",
    labelNames: ["kind", "result"] as const,
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: "ingest_queue_events",
    help: "Events waiting to be written",
    registers: [this.registry],
  });
  readonly activeParts = new Gauge({
    name: "ingest_clickhouse_active_parts",
    help: "Active data parts per ClickHouse table; merges keep it low, and a count that keeps growing means they fall behind",
    labelNames: ["table"] as const,
    registers: [this.registry],
  });
  readonly tableBytes = new Gauge({
    name: "ingest_clickhouse_table_bytes",
    help: "Bytes on disk of each table's active parts (a table's old parts linger a few minutes after a merge)",
    labelNames: ["table"] as const,
    registers: [this.registry],
  });
  readonly diskFreeBytes = new Gauge({
    name: "ingest_clickhouse_disk_free_bytes",
    help: "Free bytes on the disk the tables are on (embedded: DATA_DIR's file system); DISK_WARN_PERCENT warns",
    registers: [this.registry],
  });
  readonly diskTotalBytes = new Gauge({
    name: "ingest_clickhouse_disk_total_bytes",
    help: "Size of the disk the tables are on",
    registers: [this.registry],
  });
  readonly pendingBytes = new Gauge({
    name: "ingest_pending_bytes",
    help: "Body bytes of the requests in flight (read, checked or waiting for their write), against MAX_PENDING_BYTES",
    registers: [this.registry],
  });

  readonly queries = new Counter({
    name: "ingest_queries_total",
    help: "Queries on the query port, by outcome: ok, refused, unauthenticated, busy, failed",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly querySeconds = new Histogram({
    name: "ingest_query_duration_seconds",
    help: "Time per query on the query port, from the request to the last byte of the result",
    buckets: QUERY_SECONDS_BUCKETS,
    registers: [this.registry],
  });
  readonly queryResultRows = new Counter({
    name: "ingest_query_result_rows_total",
    help: "Rows the query port's queries returned",
    registers: [this.registry],
  });
  readonly queryResultBytes = new Counter({
    name: "ingest_query_result_bytes_total",
    help: "Bytes the query port's queries returned, before HTTP compression",
    registers: [this.registry],
  });
  readonly queryWrittenRows = new Counter({
    name: "ingest_query_written_rows_total",
    help: "Rows inserted through the query port (QUERY_READONLY=0)",
    registers: [this.registry],
  });
  readonly queriesRunning = new Gauge({
    name: "ingest_queries_running",
    help: "Queries running on the query port",
    registers: [this.registry],
  });

  constructor(private readonly partsReadOptions: PartsReadOptions = PARTS_READ) {
    new Gauge({
      name: "process_resident_memory_bytes",
      help: "Resident memory of the process",
      registers: [this.registry],
      collect() {
        this.set(process.memoryUsage().rss);
      },
    });
    new Gauge({
      name: "process_heap_used_bytes",
      help: "JavaScript heap in use",
      registers: [this.registry],
      collect() {
        this.set(process.memoryUsage().heapUsed);
      },
    });
  }

  #partsReading: Promise<void> | undefined;
  #partsReadAt = Number.NEGATIVE_INFINITY;

  /**
   * Brings the usage gauges (parts, bytes, disk) up to date for a scrape. Embedded, the engine runs one query at a time, flushes
   * included, so however often it is scraped this reads at most once an interval and never twice at once; and a
   * scrape waits for the read a bounded time, so it answers even when ClickHouse does not.
   * A read that fails or is late leaves the last values.
   */
  async sampleUsage(read: () => Promise<Usage>): Promise<void> {
    if (this.#partsReading === undefined && performance.now() - this.#partsReadAt >= this.partsReadOptions.intervalMs) {
      this.#partsReading = read()
        .then(
          ({ tables, disk }) => {
            // a table with no parts left is not shown with its old count
            this.activeParts.reset();
            this.tableBytes.reset();
            for (const [table, { parts, bytes }] of Object.entries(tables)) {
              this.activeParts.set({ table }, parts);
              this.tableBytes.set({ table }, bytes);
            }
            if (disk) {
              this.diskFreeBytes.set(disk.freeBytes);
              this.diskTotalBytes.set(disk.totalBytes);
            }
          },
          () => {},
        )
        .finally(() => {
          this.#partsReading = undefined;
          this.#partsReadAt = performance.now();
        });
    }
    if (this.#partsReading !== undefined) {
      await Promise.race([this.#partsReading, Bun.sleep(this.partsReadOptions.waitMs)]);
    }
  }

  /** Brings the gauges up to date from `sources`, then gives the text exposition of every metric. */
  async scrape(sources: ScrapeSources): Promise<string> {
    this.queueDepth.set(sources.queuedEvents());
    this.pendingBytes.set(sources.pendingBytes());
    if (sources.runningQueries) this.queriesRunning.set(sources.runningQueries());
    await this.sampleUsage(sources.usage);
    return this.text();
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
