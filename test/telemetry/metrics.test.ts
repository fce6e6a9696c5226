import { describe, expect, test } from "bun:test";
import { Metrics, type Usage } from "../../src/telemetry";

const OPTIONS = { intervalMs: 100, waitMs: 50 };

/** A reader of the usage that counts its calls and answers the parts `next` says (a table's bytes: 1,000 a part). */
function reader(next: () => Promise<Record<string, number>>) {
  const calls = { count: 0 };
  const read = async (): Promise<Usage> => {
    calls.count++;
    const parts = await next();
    return {
      tables: Object.fromEntries(
        Object.entries(parts).map(([table, count]) => [table, { parts: count, bytes: count * 1000 }]),
      ),
    };
  };
  return { calls, read };
}

const partsOf = async (metrics: Metrics) =>
  (await metrics.activeParts.get()).values.map(({ labels, value }) => [labels.table, value]);

describe("usage at a scrape", () => {
  test("concurrent scrapes share one read, and scrapes within the interval reuse it", async () => {
    const metrics = new Metrics(OPTIONS);
    const { calls, read } = reader(async () => ({ events: 12, sessions: 9 }));
    await Promise.all([metrics.sampleUsage(read), metrics.sampleUsage(read)]);
    await metrics.sampleUsage(read);
    expect(calls.count).toBe(1);
    expect(await partsOf(metrics)).toEqual([
      ["events", 12],
      ["sessions", 9],
    ]);
    await Bun.sleep(OPTIONS.intervalMs + 10);
    await metrics.sampleUsage(read);
    expect(calls.count).toBe(2);
  });

  test("each read replaces the whole set: a table with no parts left is no longer shown", async () => {
    const metrics = new Metrics({ ...OPTIONS, intervalMs: 0 });
    let parts: Record<string, number> = { events: 4, sessions: 2 };
    const { read } = reader(async () => parts);
    await metrics.sampleUsage(read);
    parts = { events: 5 };
    await metrics.sampleUsage(read);
    expect(await partsOf(metrics)).toEqual([["events", 5]]);
    expect((await metrics.tableBytes.get()).values.map(({ labels, value }) => [labels.table, value])).toEqual([
      ["events", 5000],
    ]);
  });

  test("a failed read keeps the last values", async () => {
    const metrics = new Metrics({ ...OPTIONS, intervalMs: 0 });
    let fail = false;
    const { read } = reader(async () => {
      if (fail) throw new Error("ClickHouse is down");
      return { events: 3 };
    });
    await metrics.sampleUsage(read);
    fail = true;
    await metrics.sampleUsage(read);
    expect(await partsOf(metrics)).toEqual([["events", 3]]);
  });

  test("a scrape waits a bounded time for a read that hangs, and starts no second read meanwhile", async () => {
    const metrics = new Metrics(OPTIONS);
    const { calls, read } = reader(() => new Promise(() => {}));
    const started = performance.now();
    await metrics.sampleUsage(read);
    await metrics.sampleUsage(read);
    expect(performance.now() - started).toBeLessThan(10 * OPTIONS.waitMs); // answered, not stuck
    expect(calls.count).toBe(1);
    expect(await partsOf(metrics)).toEqual([]);
  });
});
