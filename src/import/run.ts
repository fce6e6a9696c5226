import { resolve } from "node:path";
import { parseJson } from "../contract";
import { type Checkpoint, type Position, START } from "./checkpoint";
import { ImportError } from "./errors";
import { type ImportEvent, importEvent, type Rejection } from "./events";
import { detectFormat, FORMATS, type Format, type FormatName, ImportMemory, type Records } from "./formats";
import { readSource } from "./read/lines";
import { openSource, sizeOf } from "./read/source";
import type { Line } from "./read/types";
import type { ImportTarget } from "./targets";

/** Why a line, or an item in it, was not imported. */
export type Reason = Rejection | "not JSON" | "line too long" | "not UTF-8";

export interface ImportOptions {
  /** Paths, `-` for standard input. */
  readonly files: readonly string[];
  readonly target: ImportTarget;
  /** Events a batch sends at most (more only when one line holds more). */
  readonly batchSize: number;
  /** Batches sent and not yet answered, at most. */
  readonly inFlight: number;
  /** Longest line read; longer ones are rejected (the service's MAX_BATCH_BYTES). */
  readonly maxLineBytes: number;
  /** Stop at the first rejected line instead of counting it and going on. */
  readonly strict: boolean;
  /** The files' format; by default each file's is detected from its first line of JSON. */
  readonly format?: FormatName;
  /** Keeps each file's acknowledged position; to resume, the positions to start from. */
  readonly checkpoint?: Checkpoint;
  /** Once aborted, nothing more is read or sent; the batches in flight are answered and the summary says so. */
  readonly signal?: AbortSignal;
  /** Told of each rejected line or item, with where it was. */
  readonly onReject?: (rejected: Rejected) => void;
  /** Told how far the import is, every `progressEveryMs`. */
  readonly onProgress?: (progress: Progress) => void;
  readonly progressEveryMs?: number;
}

export interface Rejected {
  readonly file: string;
  readonly line: number;
  readonly reason: Reason;
  /** The line's text, when it could be read. */
  readonly text: string | undefined;
}

export interface Progress {
  /** Bytes of the files, as stored, read so far and in all (unknown when reading standard input). */
  readonly bytesRead: number;
  readonly bytesTotal: number | undefined;
  readonly lines: number;
  readonly imported: number;
  readonly rejected: number;
  readonly seconds: number;
  readonly eventsPerSecond: number;
}

export interface Summary {
  readonly files: number;
  /** Each file read and its format. */
  readonly formats: Readonly<Record<string, FormatName>>;
  /** Non-empty lines read. */
  readonly lines: number;
  readonly imported: number;
  /** Events the target dropped (a running service drops what it does not take, as its answers count). */
  readonly dropped: number;
  readonly rejected: Readonly<Partial<Record<Reason, number>>>;
  readonly retries: number;
  /** The import was stopped (by its signal) before reading everything. */
  readonly stopped: boolean;
  readonly seconds: number;
  readonly eventsPerSecond: number;
}

/** A place in a file: what a batch covers once it is answered. */
interface Mark {
  readonly file: string;
  readonly position: Position;
  readonly done: boolean;
}

/**
 * Reads every file line by line, turns each line into `/batch/` items (its format's mapping), checks each item as
 * the API does, and sends the events in batches of about `batchSize`, in file order, cut between lines, with up to
 * `inFlight` batches unanswered. A file's position is acknowledged (to the checkpoint) once every batch up to it is
 * answered. A bad line is counted and reported, and the import goes on (unless `strict`); a file that cannot be
 * read to its end, or a batch the target fails for good, stops it with an `ImportError` once the batches in flight
 * are answered.
 */
export function runImport(options: ImportOptions): Promise<Summary> {
  return new ImportRun(options).run();
}

/** One import's state: what it has read, counted and sent so far. */
class ImportRun {
  readonly #options: ImportOptions;
  readonly #started = performance.now();
  readonly #totals = { lines: 0, imported: 0, dropped: 0, retries: 0, rejected: 0 };
  readonly #rejected: Partial<Record<Reason, number>> = {};
  readonly #formats: Record<string, FormatName> = {};
  readonly #memory = new ImportMemory();
  readonly #batches: Batches;
  /** The files, each once: a file named twice would give the same events, and have one position. */
  readonly #files: readonly string[];
  readonly #bytesTotal: number | undefined;
  #bytesBefore = 0; // of the files already read
  #bytesOfFile = () => 0;

  constructor(options: ImportOptions) {
    this.#options = options;
    this.#batches = new Batches(options.target, options.inFlight, this.#totals, (mark) =>
      options.checkpoint?.acknowledge(mark.file, mark.position, mark.done),
    );
    this.#files = [...new Map(options.files.map((path) => [path === "-" ? path : resolve(path), path])).values()];
    this.#bytesTotal = this.#files.includes("-") ? undefined : sum(this.#files.map(sizeOf));
  }

  async run(): Promise<Summary> {
    const { onProgress, progressEveryMs = 5000, checkpoint } = this.#options;
    const timer = onProgress && setInterval(() => onProgress(this.#progress()), progressEveryMs);
    try {
      for (const path of this.#files) {
        if (this.#stopped()) break;
        await this.#file(path);
      }
    } finally {
      clearInterval(timer);
      await this.#batches.settled();
      checkpoint?.write();
    }
    this.#batches.throwFailure();
    return {
      files: this.#files.length,
      formats: this.#formats,
      lines: this.#totals.lines,
      imported: this.#totals.imported,
      dropped: this.#totals.dropped,
      rejected: this.#rejected,
      retries: this.#totals.retries,
      stopped: this.#stopped(),
      seconds: this.#seconds(),
      eventsPerSecond: this.#totals.imported / this.#seconds(),
    };
  }

  /** Reads a file from its checkpointed position to its end, sending its events in batches cut between lines. */
  async #file(path: string): Promise<void> {
    const { checkpoint, maxLineBytes, batchSize } = this.#options;
    const from = path === "-" || checkpoint === undefined ? START : checkpoint.startOf(path);
    if (from === undefined) {
      this.#bytesBefore += sizeOf(path); // stored before this run
      return;
    }
    const source = await openSource(path);
    this.#bytesOfFile = source.bytesRead;
    const named = this.#options.format;
    let format: Format | undefined = named === undefined ? undefined : FORMATS[named];
    let batch: ImportEvent[] = [];
    let batchChars = 0;
    let read: Mark = { file: path, position: from, done: false }; // the last line read to its end
    const send = async () => {
      await this.#batches.send(batch, read);
      batch = [];
      batchChars = 0;
    };
    try {
      for await (const line of readSource(source.bytes, maxLineBytes, from)) {
        if (this.#stopped()) return;
        this.#totals.lines++;
        const chars = "text" in line ? line.text.length : 0;
        // a batch stays well within what the service takes in one request
        if (batch.length > 0 && batchChars + chars > maxLineBytes / 2) await send();
        read = { file: path, position: line.after, done: false };
        if ("reason" in line) {
          this.#reject(source.name, line.number, line.reason, undefined);
          continue;
        }
        let record: unknown;
        try {
          record = parseJson(line.text);
        } catch {
          this.#reject(source.name, line.number, "not JSON", line.text);
          continue;
        }
        format ??= detectFormat(record);
        this.#formats[source.name] = format.name;
        batch.push(...this.#events(format.records(record, this.#memory), source.name, line));
        batchChars += chars;
        if (batch.length >= batchSize) await send();
      }
    } catch (error) {
      if (error instanceof ImportError || this.#batches.failed(error)) throw error;
      const what = source.gzip ? "its gzip stream is truncated or corrupt" : "it could not be read";
      throw new ImportError(`${source.name}: ${what} after line ${read.position.line} (${(error as Error).message})`);
    }
    read = { ...read, done: true };
    await send();
    this.#bytesBefore += source.bytesRead();
    this.#bytesOfFile = () => 0;
  }

  /** A line's items checked as the API does: the events to send; the others rejected. */
  #events(records: Records, file: string, line: Line): ImportEvent[] {
    if ("reason" in records) {
      this.#reject(file, line.number, records.reason, line.text);
      return [];
    }
    const events: ImportEvent[] = [];
    for (const [index, item] of records.items.entries()) {
      const event = importEvent(item, { line: line.number, index, text: line.text });
      if (typeof event === "string") this.#reject(file, line.number, event, line.text);
      else events.push(event);
    }
    return events;
  }

  #reject(file: string, line: number, reason: Reason, text: string | undefined): void {
    this.#rejected[reason] = (this.#rejected[reason] ?? 0) + 1;
    this.#totals.rejected++;
    this.#options.onReject?.({ file, line, reason, text });
    if (this.#options.strict) throw new ImportError(`${file}, line ${line}: ${reason}`);
  }

  #progress(): Progress {
    return {
      bytesRead: this.#bytesBefore + this.#bytesOfFile(),
      bytesTotal: this.#bytesTotal,
      lines: this.#totals.lines,
      imported: this.#totals.imported,
      rejected: this.#totals.rejected,
      seconds: this.#seconds(),
      eventsPerSecond: this.#totals.imported / this.#seconds(),
    };
  }

  #seconds(): number {
    return (performance.now() - this.#started) / 1000;
  }

  #stopped(): boolean {
    return this.#options.signal?.aborted === true;
  }
}

/**
 * The batches sent and not yet answered: at most `limit` at once, and acknowledged in the order they were sent, so
 * a mark is acknowledged only once everything before it is stored.
 */
class Batches {
  readonly #inFlight = new Set<Promise<void>>();
  readonly #queue: { readonly mark: Mark; answered: boolean }[] = [];
  #failure: unknown;

  constructor(
    private readonly target: ImportTarget,
    private readonly limit: number,
    private readonly totals: { imported: number; dropped: number; retries: number },
    private readonly acknowledge: (mark: Mark) => void,
  ) {}

  /** Sends the events (none: only marks the place), waiting while `limit` batches are unanswered. */
  async send(events: readonly ImportEvent[], mark: Mark): Promise<void> {
    this.throwFailure();
    const entry = { mark, answered: false };
    this.#queue.push(entry);
    if (events.length === 0) {
      entry.answered = true;
      this.#acknowledgeAnswered();
      return;
    }
    const sending = this.target.send(events).then(
      ({ dropped, retries }) => {
        this.totals.imported += events.length - dropped;
        this.totals.dropped += dropped;
        this.totals.retries += retries;
        entry.answered = true;
        this.#acknowledgeAnswered();
      },
      (error: unknown) => {
        this.#failure ??= error;
      },
    );
    const tracked = sending.finally(() => this.#inFlight.delete(tracked));
    this.#inFlight.add(tracked);
    if (this.#inFlight.size >= this.limit) await Promise.race(this.#inFlight);
    this.throwFailure();
  }

  /** Whether `error` is the failure of a batch (not of reading). */
  failed(error: unknown): boolean {
    return error !== undefined && error === this.#failure;
  }

  async settled(): Promise<void> {
    await Promise.all(this.#inFlight);
  }

  throwFailure(): void {
    if (this.#failure !== undefined) throw this.#failure;
  }

  #acknowledgeAnswered(): void {
    while (this.#queue[0]?.answered) this.acknowledge(this.#queue.shift()!.mark);
  }
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
