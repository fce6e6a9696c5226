import { afterEach, expect, test } from "bun:test";
import { restartFor, workerThreadsFor } from "../../src/engine/restart";

// The restart itself (the same process ID, the settings in its environment) is tested on real processes in
// test/main.test.ts and test/binary.test.ts; here, what it does when it need not, or cannot, start again.

type Execve = NonNullable<typeof process.execve>;

const saved = {
  execve: process.execve,
  purge: process.env.MIMALLOC_PURGE_DELAY,
  threads: process.env.UV_THREADPOOL_SIZE,
};
afterEach(() => {
  process.execve = saved.execve as Execve;
  for (const [name, value] of [
    ["MIMALLOC_PURGE_DELAY", saved.purge],
    ["UV_THREADPOOL_SIZE", saved.threads],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

/** Replaces `process.execve` for the test: records each call and fails as `execve` does when it cannot run. */
function failingExecve(): unknown[][] {
  const calls: unknown[][] = [];
  process.execve = ((...args: unknown[]) => {
    calls.push(args);
    throw new Error("EACCES: permission denied, execve");
  }) as Execve;
  return calls;
}

test("with the settings already in its environment, it goes on without starting again", () => {
  const calls = failingExecve();
  process.env.MIMALLOC_PURGE_DELAY = "100";
  process.env.UV_THREADPOOL_SIZE = "64";
  expect(restartFor({ workerThreads: workerThreadsFor(4) })).toBeUndefined();
  expect(calls).toHaveLength(0);
});

test("a start it cannot make is reported, with what it would have set, and the process goes on", () => {
  const calls = failingExecve();
  delete process.env.MIMALLOC_PURGE_DELAY;
  process.env.UV_THREADPOOL_SIZE = "2";
  const reason = restartFor({ workerThreads: workerThreadsFor(0) });
  expect(reason).toBe("MIMALLOC_PURGE_DELAY=-1 UV_THREADPOOL_SIZE=4 not set: EACCES: permission denied, execve");
  expect(calls).toHaveLength(1);
  const [path, argv, env] = calls[0] as [string, string[], Record<string, string>];
  expect([path, argv[0]]).toEqual([process.execPath, process.execPath]);
  expect([env.MIMALLOC_PURGE_DELAY, env.UV_THREADPOOL_SIZE]).toEqual(["-1", "4"]);
});
