import type { CapturedEvent, EventSink } from "../../src/contract/event";

/** An event sink that keeps what it is given, in memory: for the rules that need no database. */
export class MemorySink implements EventSink {
  readonly batches: (readonly CapturedEvent[])[] = [];
  /** When set, `ingest` fails with it (a database that refuses the write). */
  failure: Error | undefined;

  get events(): CapturedEvent[] {
    return this.batches.flat();
  }

  async ingest(events: readonly CapturedEvent[]): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    this.batches.push(events);
  }
}
