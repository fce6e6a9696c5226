import { readdirSync, readFileSync } from "node:fs";
import { setPriority } from "node:os";

/** Linux's lowest CPU priority. */
export const MERGE_THREAD_NICE = 19;

const TASKS = "/proc/self/task";

/** The ids of this process's threads whose name starts with `prefix`; none where there is no /proc. */
export function threadsNamed(prefix: string): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(TASKS);
  } catch {
    return [];
  }
  return tasks.flatMap((task) => {
    try {
      return readFileSync(`${TASKS}/${task}/comm`, "utf8").startsWith(prefix) ? [Number(task)] : [];
    } catch {
      return []; // the thread ended while we looked
    }
  });
}

/**
 * The embedded engine merges parts on threads of this process (named `MergeMutate`), on the same cores as the
 * flushes that requests wait for. At the lowest priority a merge still takes every moment the cores are idle, but
 * no longer delays a flush (docs/architecture.md#the-embedded-engine). ClickHouse's own setting for it
 * (`os_threads_nice_value_merge_mutate`) works only with CAP_SYS_NICE, because it restores the value after each
 * merge; raising a thread's nice value once, as here, needs no privilege. The threads start with the engine's
 * first MergeTree table and live as long as the engine, so this runs after the schema exists. (When an engine
 * shuts down, its last connection closed, they return to the common pool still lowered: in the service that is
 * at exit; the test suite, which restarts its engine, runs some later queries at low priority.)
 */
export function lowerMergePriority(): void {
  for (const thread of threadsNamed("MergeMutate")) {
    try {
      setPriority(thread, MERGE_THREAD_NICE);
    } catch {
      // the thread ended while we looked
    }
  }
}
