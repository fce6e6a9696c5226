/**
 * Runtime settings read once, when the process starts, that the service needs other than their defaults. A
 * process that lacks one starts itself again, at once and in its own place (`execve`: the same process ID,
 * arguments, runtime flags and descriptors), with it set; a value already in the environment is kept, so an
 * operator's own choice wins.
 *
 * - The allocator's purge (`MIMALLOC_PURGE_DELAY=-1`): Bun's allocator hands the pages of freed memory back to the
 *   system a moment after they are freed, and every flush frees and allocates again tens of megabytes (the rows,
 *   their JSON, the engine's copy of it), so each flush faulted the same pages in again: on an import, a third of
 *   the process's CPU time was the kernel's (docs/architecture.md#the-allocator). Kept, the process stays at its
 *   peak resident size, which the queue, the flush size and the caches bound.
 * - The worker threads (`UV_THREADPOOL_SIZE`): every call into the embedded engine (a query, a stream's next chunk,
 *   an insert) holds one of them until the engine answers, and there are as many as the machine has cores. On two
 *   cores, the two events inserts a flush and the one before it run at once left the flush's own identity queries
 *   no thread; and with the query port, a slow query holds one (`workerThreadsFor`).
 *
 * Returns only when the process goes on as it is: with nothing to set (undefined), or when it could not start
 * again (why: the process then runs slower, and is told so, rather than not at all).
 */
export function restartFor({ workerThreads }: { readonly workerThreads?: number } = {}): string | undefined {
  const env: Record<string, string> = {};
  if (process.env.MIMALLOC_PURGE_DELAY === undefined) env.MIMALLOC_PURGE_DELAY = "-1";
  const threads = Number(process.env.UV_THREADPOOL_SIZE);
  if (workerThreads !== undefined && !(Number.isInteger(threads) && threads >= workerThreads))
    env.UV_THREADPOOL_SIZE = String(workerThreads);
  if (Object.keys(env).length === 0) return undefined;
  if (process.execve === undefined) return "this runtime cannot start itself again (process.execve)";
  // The compiled executable's arguments start with its embedded entry point, which it adds again by itself.
  const args = process.argv[1]?.startsWith("/$bunfs/")
    ? process.argv.slice(2)
    : [...process.execArgv, ...process.argv.slice(1)];
  try {
    process.execve(process.execPath, [process.execPath, ...args], { ...process.env, ...env });
  } catch (error) {
    return `${Object.entries(env)
      .map(([name, value]) => `${name}=${value}`)
      .join(" ")} not set: ${(error as Error).message}`;
  }
  return undefined; // not reached: a successful execve does not return
}

/**
 * What the service needs: a thread for each query the port runs at once, and four for the write path (its
 * identity session, two events sessions, and the session that settles days; write/storage.ts).
 */
export const workerThreadsFor = (queryConcurrency: number): number => queryConcurrency + 4;
