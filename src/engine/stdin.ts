import { closeSync, openSync } from "node:fs";

/** Where standard input went: its own descriptor, null once taken when it could not be opened. */
let moved: number | null | undefined;

/**
 * Moves standard input to a descriptor of its own and leaves /dev/null on descriptor 0; returns that descriptor
 * (undefined when standard input was closed). Idempotent. The embedded engine runs in this process and takes data
 * waiting on descriptor 0 for an insert's own data, then refuses every insert ("both inlined and external data"):
 * a service with anything piped into it would answer 500 to every batch, and an import reading standard input
 * could not write what it read. So whatever opens the engine calls this first, and the import reads standard input
 * from the descriptor it returns.
 */
export function detachStdin(): number | undefined {
  if (moved === undefined) {
    try {
      moved = openSync("/dev/stdin", "r");
    } catch {
      moved = null;
    }
    try {
      closeSync(0);
    } catch {
      // already closed
    }
    openSync("/dev/null", "r"); // the lowest free descriptor: 0
  }
  return moved ?? undefined;
}
