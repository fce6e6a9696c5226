/** Timing a flush's phases, in seconds (the flush metrics' units). */

/** How long `work` took, in seconds. */
export async function timed(work: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await work();
  return (performance.now() - started) / 1000;
}

/** Seconds since the previous call (or since it was made). */
export function phaseTimer(): () => number {
  let last = performance.now();
  return () => {
    const now = performance.now();
    const seconds = (now - last) / 1000;
    last = now;
    return seconds;
  };
}
