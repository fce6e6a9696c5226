/**
 * Every call into the embedded engine (a query, a stream's next chunk, an insert) runs on one of the runtime's
 * worker threads, as many as the machine has cores unless `UV_THREADPOOL_SIZE` says otherwise, and holds it until
 * the engine answers. With the query port, a slow query holds one: on two cores, two of them left the write path
 * no thread, and a batch waited for a query to end. The pool is sized when the process starts, so a service that
 * needs more than it has starts itself again, at once and in its own place (`execve`: the same process ID,
 * arguments and descriptors), with the size set.
 */
export function ensureWorkerThreads(needed: number): void {
  const size = Number(process.env.UV_THREADPOOL_SIZE);
  if ((Number.isInteger(size) && size >= needed) || process.execve === undefined) return;
  // The compiled executable's arguments start with its embedded entry point, which it adds again by itself.
  const args = process.argv[1]?.startsWith("/$bunfs/") ? process.argv.slice(2) : process.argv.slice(1);
  process.execve(process.execPath, [process.execPath, ...args], {
    ...process.env,
    UV_THREADPOOL_SIZE: String(needed),
  });
}

/** What the service needs: a thread for each query the port runs at once, and four for the write path. */
export const workerThreadsFor = (queryConcurrency: number): number => queryConcurrency + 4;
