import { parseJson } from "../json";
import { type ImportEvent, importEvent, type Rejection } from "./events";
import { readLines } from "./lines";
import { posthogRecords } from "./posthog";
import { ImportError, openSource } from "./source";
import type { ImportTarget } from "./targets";

/** Why a line, or an item in it, was not imported. */
export type Reason = Rejection | "not JSON" | "line too long" | "not UTF-8";

export interface ImportOptions {
  /** Paths, `-` for standard input. */
  readonly files: readonly string[];
  readonly target: ImportTarget;
  /** Events a batch sends at most. */
  readonly batchSize: number;
  /** Batches sent and not yet answered, at most. */
  readonly inFlight: number;
  /** Longest line read; longer ones are rejected (the service's MAX_BATCH_BYTES). */
  readonly maxLineBytes: number;
  /** Stop at the first rejected line instead of counting it and going on. */
  readonly strict: boolean;
  /** Told of each rejected line or item, with where it was. */
  readonly onReject?: (rejected: Rejected) => void;
}

export interface Rejected {
  readonly file: string;
  readonly line: number;
  readonly reason: Reason;
  /** The line's text, when it could be read. */
  readonly text: string | undefined;
}

export interface Summary {
  readonly files: number;
  /** Non-empty lines read. */
  readonly lines: number;
  readonly imported: number;
  /** Events the target dropped (a running service drops what it does not take, as its answers count). */
  readonly dropped: number;
  readonly rejected: Readonly<Partial<Record<Reason, number>>>;
  readonly retries: number;
  readonly seconds: number;
  readonly eventsPerSecond: number;
}

/**
 * Reads every file line by line, turns each line into `/batch/` items (PostHog's shapes), checks each item as the
 * API does, and sends the events in batches of `batchSize`, in file order, with up to `inFlight` batches
 * unanswered. A bad line is counted and reported, and the import goes on (unless `strict`); a file that cannot be
 * read to its end, or a batch the target fails for good, stops it with an `ImportError` once the batches in flight
 * are answered.
 */
export async function runImport(options: ImportOptions): Promise<Summary> {
  const started = performance.now();
  const rejected: Partial<Record<Reason, number>> = {};
  const totals = { lines: 0, imported: 0, dropped: 0, retries: 0 };
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;
  let batch: ImportEvent[] = [];

  const send = async (events: ImportEvent[]): Promise<void> => {
    const sending = options.target.send(events).then(
      ({ dropped, retries }) => {
        totals.imported += events.length - dropped;
        totals.dropped += dropped;
        totals.retries += retries;
      },
      (error: unknown) => {
        failure ??= error;
      },
    );
    const tracked = sending.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    if (inFlight.size >= options.inFlight) await Promise.race(inFlight);
    if (failure !== undefined) throw failure;
  };
  const reject = (file: string, line: number, reason: Reason, text: string | undefined) => {
    rejected[reason] = (rejected[reason] ?? 0) + 1;
    options.onReject?.({ file, line, reason, text });
    if (options.strict) throw new ImportError(`${file}, line ${line}: ${reason}`);
  };

  try {
    for (const path of options.files) {
      const source = await openSource(path);
      let lastLine = 0;
      try {
        for await (const line of readLines(source.bytes, options.maxLineBytes)) {
          lastLine = line.number;
          totals.lines++;
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
          const records = posthogRecords(record);
          if ("reason" in records) {
            reject(source.name, line.number, records.reason, line.text);
            continue;
          }
          for (const [index, item] of records.items.entries()) {
            const event = importEvent(item, { line: line.number, index, text: line.text });
            if (typeof event === "string") reject(source.name, line.number, event, line.text);
            else batch.push(event);
            if (batch.length >= options.batchSize) {
              const full = batch;
              batch = [];
              await send(full);
            }
          }
        }
      } catch (error) {
        if (error instanceof ImportError || error === failure) throw error;
        const what = source.gzip ? "its gzip stream is truncated or corrupt" : "it could not be read";
        throw new ImportError(`${source.name}: ${what} after line ${lastLine} (${(error as Error).message})`);
      }
    }
    if (batch.length > 0) await send(batch);
  } finally {
    await Promise.all(inFlight);
  }
  if (failure !== undefined) throw failure;
  const seconds = (performance.now() - started) / 1000;
  return {
    files: options.files.length,
    ...totals,
    rejected,
    seconds,
    eventsPerSecond: totals.imported / seconds,
  };
}
