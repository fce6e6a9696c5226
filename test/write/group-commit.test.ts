import { describe, expect, test } from "bun:test";
import { GroupCommit } from "../../src/write/group-commit";

/** Failures named "refused" are the data's own; anything else is the database's. */
const isolates = (error: unknown) => String((error as Error).message).startsWith("refused");

/** A flush that records what it was given and can be held open, to let submissions pile up behind it. */
function recorder(failOn?: (items: readonly number[]) => boolean) {
  const flushes: number[][] = [];
  let release: () => void = () => {};
  let gate: Promise<void> = Promise.resolve();
  return {
    flushes,
    hold() {
      gate = new Promise((resolve) => (release = resolve));
    },
    release: () => release(),
    flush: async (items: readonly number[]) => {
      flushes.push([...items]);
      await gate;
      if (failOn?.(items)) throw new Error(`refused ${items.join(",")}`);
    },
  };
}

describe("GroupCommit", () => {
  test("coalesces submissions that arrive during a flush into the next one, in arrival order", async () => {
    const r = recorder();
    const commits = new GroupCommit(r.flush, { maxItems: 100, isolates, lingerMs: 0 });
    r.hold();
    const first = commits.submit([1]);
    const rest = [commits.submit([2, 3]), commits.submit([4]), commits.submit([5, 6])];
    r.release();
    await Promise.all([first, ...rest]);
    expect(r.flushes).toEqual([[1], [2, 3, 4, 5, 6]]);
  });

  test("a flush takes at most maxItems, but always one whole submission", async () => {
    const r = recorder();
    const commits = new GroupCommit(r.flush, { maxItems: 3, isolates, lingerMs: 0 });
    r.hold();
    const all = [
      commits.submit([0]),
      commits.submit([1, 2]),
      commits.submit([3]),
      commits.submit([4, 5, 6, 7]),
      commits.submit([8]),
    ];
    r.release();
    await Promise.all(all);
    expect(r.flushes).toEqual([[0], [1, 2, 3], [4, 5, 6, 7], [8]]);
  });

  test("a submission the flush refuses fails alone; the others in its group are written", async () => {
    const r = recorder((items) => items.includes(13));
    const commits = new GroupCommit(r.flush, { maxItems: 100, isolates, lingerMs: 0 });
    r.hold();
    const first = commits.submit([1]);
    const good = commits.submit([2]);
    const bad = commits.submit([13]);
    const alsoGood = commits.submit([3]);
    r.release();
    await first;
    expect(await Promise.allSettled([good, bad, alsoGood])).toMatchObject([
      { status: "fulfilled" },
      { status: "rejected", reason: { message: "refused 13" } },
      { status: "fulfilled" },
    ]);
    // halves, in order, until the failing one stands alone
    expect(r.flushes).toEqual([[1], [2, 13, 3], [2, 13], [2], [13], [3]]);
  });

  test("one bad submission among sixteen costs about 2·log2(16) flushes, not sixteen", async () => {
    const r = recorder((items) => items.includes(13));
    const commits = new GroupCommit(r.flush, { maxItems: 100, isolates, lingerMs: 0 });
    r.hold();
    const first = commits.submit([0]);
    const rest = Array.from({ length: 16 }, (_, i) => commits.submit([i + 1]));
    r.release();
    await first;
    const settled = await Promise.allSettled(rest);
    expect(settled.map((s) => s.status === "fulfilled")).toEqual(rest.map((_, i) => i + 1 !== 13));
    expect(r.flushes.length - 1).toBe(9);
  });

  test("a failure of the database's own (not the data's) fails the whole group once", async () => {
    const r = recorder(() => true);
    const down = async (items: readonly number[]) => {
      await r.flush(items).catch(() => {});
      throw new Error("disk full");
    };
    const commits = new GroupCommit(down, { maxItems: 100, isolates, lingerMs: 0 });
    r.hold();
    const first = commits.submit([1]);
    const rest = [commits.submit([2]), commits.submit([3]), commits.submit([4])];
    r.release();
    const settled = await Promise.allSettled([first, ...rest]);
    expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected", "rejected", "rejected"]);
    expect(r.flushes).toEqual([[1], [2, 3, 4]]);
  });

  test("drain waits for everything submitted", async () => {
    const r = recorder();
    const commits = new GroupCommit(r.flush, { maxItems: 100, isolates, lingerMs: 0 });
    r.hold();
    let done = false;
    void commits.submit([1]).then(() => (done = true));
    setTimeout(() => r.release(), 10);
    await commits.drain();
    expect(done).toBe(true);
    await commits.drain(); // idle: returns at once
  });

  describe("release", () => {
    /** A flush that lets the next one begin at once, then finishes when the test says (or fails on 13). */
    function overlapping() {
      const flushes: number[][] = [];
      const finish: (() => void)[] = [];
      const flush = async (items: readonly number[], release: () => void) => {
        flushes.push([...items]);
        release();
        await new Promise<void>((resolve) => finish.push(resolve));
        if (items.includes(13)) throw new Error(`refused ${items.join(",")}`);
      };
      return { flushes, finish: (index: number) => finish[index]!(), flush };
    }

    test("the next group's flush begins beside a released one; a third waits until the first has finished", async () => {
      const o = overlapping();
      const commits = new GroupCommit(o.flush, { maxItems: 1, isolates, lingerMs: 0 });
      let answered = 0;
      const written = [1, 2, 3].map((item) => commits.submit([item]).then(() => answered++));
      await Bun.sleep(5);
      expect(o.flushes).toEqual([[1], [2]]);
      expect(answered).toBe(0); // released is not written: each is answered when its flush finishes
      o.finish(0);
      await written[0];
      await Bun.sleep(5);
      expect(o.flushes).toEqual([[1], [2], [3]]);
      expect(answered).toBe(1);
      o.finish(1);
      o.finish(2);
      await Promise.all(written);
      expect(answered).toBe(3);
    });

    test("with less than a full flush waiting, the next flush waits for the released one's answer and its clients", async () => {
      const o = overlapping();
      const commits = new GroupCommit(o.flush, { maxItems: 100, isolates, lingerMs: 5_000 });
      const first = commits.submit([1]);
      const second = commits.submit([2]);
      await Bun.sleep(5);
      expect(o.flushes).toEqual([[1]]); // released, but one item waiting is not a full flush
      o.finish(0);
      await first;
      const third = commits.submit([3]); // the first client, back
      await Bun.sleep(5);
      expect(o.flushes).toEqual([[1], [2, 3]]);
      o.finish(1);
      await Promise.all([second, third]);
    });

    test("a full flush's worth waiting begins beside the released one", async () => {
      const o = overlapping();
      const commits = new GroupCommit(o.flush, { maxItems: 2, isolates, lingerMs: 5_000 });
      const written = [commits.submit([1]), commits.submit([2])];
      await Bun.sleep(5);
      expect(o.flushes).toEqual([[1]]); // half a flush waits
      written.push(commits.submit([3]));
      await Bun.sleep(5);
      expect(o.flushes).toEqual([[1], [2, 3]]); // a full one: it begins while the first is still writing
      o.finish(0);
      o.finish(1);
      await Promise.all(written);
    });

    test("a released flush that fails for one submission's data is split, and only that one fails", async () => {
      const o = overlapping();
      const commits = new GroupCommit(o.flush, { maxItems: 100, isolates, lingerMs: 0 });
      const first = commits.submit([1]);
      const group = [commits.submit([2]), commits.submit([13]), commits.submit([3])];
      // finish every flush as it comes, in order
      let finished = 0;
      const settled = Promise.allSettled([first, ...group]);
      while (finished < 6) {
        await Bun.sleep(2);
        while (finished < o.flushes.length) o.finish(finished++);
      }
      expect((await settled).map((s) => s.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
      expect(o.flushes.slice(0, 2)).toEqual([[1], [2, 13, 3]]);
      // the halves, each alone; the failing one is flushed by itself in the end
      expect(o.flushes.slice(2).sort()).toEqual([[13], [2], [2, 13], [3]].sort());
      await commits.drain();
    });

    test("drain waits for a released flush to finish", async () => {
      const o = overlapping();
      const commits = new GroupCommit(o.flush, { maxItems: 100, isolates, lingerMs: 0 });
      let done = false;
      void commits.submit([1]).then(() => (done = true));
      setTimeout(() => o.finish(0), 10);
      await commits.drain();
      expect(done).toBe(true);
    });
  });

  describe("lingerMs", () => {
    /**
     * Two clients that keep sending: 1 is flushed alone while 2 waits; once 1 is answered the next flush expects
     * both clients (the one answered and the one waiting), and 1's next submission, 3, joins 2's flush.
     */
    async function twoClients(lingerMs: number, maxItems = 100) {
      const r = recorder();
      const commits = new GroupCommit(r.flush, { maxItems, isolates, lingerMs });
      r.hold();
      const first = commits.submit([1]);
      const second = commits.submit([2]);
      r.release();
      await first;
      await Bun.sleep(5); // the client's round trip
      await Promise.all([second, commits.submit([3])]);
      return { r, commits };
    }

    test("two clients that would take turns are flushed together", async () => {
      const { r } = await twoClients(5_000);
      expect(r.flushes).toEqual([[1], [2, 3]]);
    });

    test("0 never waits: the two clients take turns", async () => {
      const { r } = await twoClients(0);
      expect(r.flushes).toEqual([[1], [2], [3]]);
    });

    test("a flush waits for as many submissions as the last one answered, then takes them together", async () => {
      const { r, commits } = await twoClients(5_000);
      const started = performance.now();
      const four = commits.submit([4]);
      await Bun.sleep(20);
      expect(r.flushes).toHaveLength(2); // still waiting for the second client
      await Promise.all([four, commits.submit([5])]);
      expect(r.flushes).toEqual([[1], [2, 3], [4, 5]]);
      expect(performance.now() - started).toBeLessThan(1_000); // ended by the arrival, not the timer
    });

    test("waits at most lingerMs for clients that do not come back", async () => {
      const { r, commits } = await twoClients(50);
      const started = performance.now();
      await commits.submit([4]);
      expect(performance.now() - started).toBeGreaterThanOrEqual(45);
      expect(r.flushes).toEqual([[1], [2, 3], [4]]);
      // the flush answered one, so one is enough now
      const again = performance.now();
      await commits.submit([5]);
      expect(performance.now() - again).toBeLessThan(45);
    });

    test("a lone client never waits", async () => {
      const r = recorder();
      const commits = new GroupCommit(r.flush, { maxItems: 100, isolates, lingerMs: 5_000 });
      const started = performance.now();
      for (let i = 0; i < 20; i++) await commits.submit([i]);
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(r.flushes).toHaveLength(20);
    });

    test("maxItems waiting ends the wait", async () => {
      const { r, commits } = await twoClients(5_000, 3);
      const started = performance.now();
      await commits.submit([4, 5, 6]);
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(r.flushes.at(-1)).toEqual([4, 5, 6]);
    });
  });
});
