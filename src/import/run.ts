import { resolve } from "node:path";
import { parseJson } from "../json";
import { type Checkpoint, type Position, START } from "./checkpoint";
import { type ImportEvent, importEvent, type Rejection } from "./events";
import { detectFormat, FORMATS, type Format, type FormatName, ImportMemory } from "./formats";
import { readLines } from "./lines";
import { ImportError, openSource, sizeOf } from "./source";
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
export async function runImport(options: ImportOptions): Promise<Summary> {
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  const rejected: Partial<Record<Reason, number>> = {};
  const totals = { lines: 0, imported: 0, dropped: 0, retries: 0, rejected: 0 };
  const formats: Record<string, FormatName> = {};
  const memory = new ImportMemory();
  const batches = new Batches(options.target, options.inFlight, totals, (mark) =>
    options.checkpoint?.acknowledge(mark.file, mark.position, mark.done),
  );
  // A file named twice is read once: its events would be the same ones, and its checkpoint one position.
  const files = [...new Map(options.files.map((path) => [path === "-" ? path : resolve(path), path])).values()];
  const bytesTotal = files.includes("-") ? undefined : sum(files.map(sizeOf));
  let bytesBefore = 0; // of the files already read
  let bytesOfFile = () => 0;
  const progress = (): Progress => ({
    bytesRead: bytesBefore + bytesOfFile(),
    bytesTotal,
    lines: totals.lines,
    imported: totals.imported,
    rejected: totals.rejected,
    seconds: seconds(),
    eventsPerSecond: totals.imported / seconds(),
  });
  const timer =
    options.onProgress !== undefined
      ? setInterval(() => options.onProgress?.(progress()), options.progressEveryMs ?? 5000)
      : undefined;
  const reject = (file: string, line: number, reason: Reason, text: string | undefined) => {
    rejected[reason] = (rejected[reason] ?? 0) + 1;
    totals.rejected++;
    options.onReject?.({ file, line, reason, text });
    if (options.strict) throw new ImportError(`${file}, line ${line}: ${reason}`);
  };
  const stopped = () => options.signal?.aborted === true;

  try {
    for (const path of files) {
      if (stopped()) break;
      const from = path === "-" || options.checkpoint === undefined ? START : options.checkpoint.startOf(path);
      if (from === undefined) {
        bytesBefore += sizeOf(path); // stored before this run
        continue;
      }
      const source = await openSource(path);
      bytesOfFile = source.bytesRead;
      let format: Format | undefined = options.format === undefined ? undefined : FORMATS[options.format];
      let batch: ImportEvent[] = [];
      let batchChars = 0;
      let read: Mark = { file: path, position: from, done: false }; // the last line read to its end
      try {
        for await (const line of readLines(source.bytes, options.maxLineBytes, from)) {
          if (stopped()) break;
          totals.lines++;
          if (batch.length > 0 && batchChars + ("text" in line ? line.text.length : 0) > options.maxLineBytes / 2) {
            // a batch stays well within what the service takes in one request
            await batches.send(batch, read);
            batch = [];
            batchChars = 0;
          }
          read = { file: path, position: { line: line.number, offset: line.end }, done: false };
          if ("reason" in line) {
            reject(source.name, line.number, line.reason, undefined);
            continue;
          }
          let record: unknown;
          try {
            record = parseJson(line.text);
          } catch {
            reject(source.name, line.number, "not JSON", line.text);
            continue;
          }
          format ??= detectFormat(record);
          formats[source.name] = format.name;
          const records = format.records(record, memory);
          if ("reason" in records) {
            reject(source.name, line.number, records.reason, line.text);
            continue;
          }
          for (const [index, item] of records.items.entries()) {
            const event = importEvent(item, { line: line.number, index, text: line.text });
            if (typeof event === "string") reject(source.name, line.number, event, line.text);
            else batch.push(event);
          }
          batchChars += line.text.length;
          if (batch.length >= options.batchSize) {
            await batches.send(batch, read);
            batch = [];
            batchChars = 0;
          }
        }
      } catch (error) {
        if (error instanceof ImportError || batches.failed(error)) throw error;
        const what = source.gzip ? "its gzip stream is truncated or corrupt" : "it could not be read";
        throw new ImportError(`${source.name}: ${what} after line ${read.position.line} (${(error as Error).message})`);
      }
      if (stopped()) break;
      await batches.send(batch, { ...read, done: true });
      bytesBefore += source.bytesRead();
      bytesOfFile = () => 0;
    }
  } finally {
    clearInterval(timer);
    await batches.settled();
    options.checkpoint?.write();
  }
  batches.throwFailure();
  return {
    files: files.length,
    formats,
    lines: totals.lines,
    imported: totals.imported,
    dropped: totals.dropped,
    rejected,
    retries: totals.retries,
    stopped: stopped(),
    seconds: seconds(),
    eventsPerSecond: totals.imported / seconds(),
  };
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
