import { describe, expect, test } from "bun:test";
import { GroupCommit } from "../../src/storage/group-commit";

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
    const commits = new GroupCommit(r.flush, { maxItems: 100, isolates });
    r.hold();
    const first = commits.submit([1]);
    const rest = [commits.submit([2, 3]), commits.submit([4]), commits.submit([5, 6])];
    r.release();
    await Promise.all([first, ...rest]);
    expect(r.flushes).toEqual([[1], [2, 3, 4, 5, 6]]);
  });

  test("a flush takes at most maxItems, but always one whole submission", async () => {
    const r = recorder();
    const commits = new GroupCommit(r.flush, { maxItems: 3, isolates });
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
    const commits = new GroupCommit(r.flush, { maxItems: 100, isolates });
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
    const commits = new GroupCommit(r.flush, { maxItems: 100, isolates });
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
    const commits = new GroupCommit(down, { maxItems: 100, isolates });
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
    const commits = new GroupCommit(r.flush, { maxItems: 100, isolates });
    r.hold();
    let done = false;
    void commits.submit([1]).then(() => (done = true));
    setTimeout(() => r.release(), 10);
    await commits.drain();
    expect(done).toBe(true);
    await commits.drain(); // idle: returns at once
  });
});
