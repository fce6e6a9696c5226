import { describe, expect, test } from "bun:test";
import { GroupCommit } from "../../src/storage/group-commit";

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
    const commits = new GroupCommit(r.flush, 100);
    r.hold();
    const first = commits.submit([1]);
    const rest = [commits.submit([2, 3]), commits.submit([4]), commits.submit([5, 6])];
    r.release();
    await Promise.all([first, ...rest]);
    expect(r.flushes).toEqual([[1], [2, 3, 4, 5, 6]]);
  });

  test("a flush takes at most maxItems, but always one whole submission", async () => {
    const r = recorder();
    const commits = new GroupCommit(r.flush, 3);
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
    const commits = new GroupCommit(r.flush, 100);
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
    expect(r.flushes).toEqual([[1], [2, 13, 3], [2], [13], [3]]);
  });

  test("drain waits for everything submitted", async () => {
    const r = recorder();
    const commits = new GroupCommit(r.flush, 100);
    r.hold();
    let done = false;
    void commits.submit([1]).then(() => (done = true));
    setTimeout(() => r.release(), 10);
    await commits.drain();
    expect(done).toBe(true);
    await commits.drain(); // idle: returns at once
  });
});
