/** Writes a command's failure to stderr, as the operator reads it, and returns its exit status: 1. */
export function failure(message: string): number {
  process.stderr.write(`${message}\n`);
  return 1;
}

/** Writes a usage error to stderr, then the command's usage, and returns its exit status: 2. */
export function usageError(message: string, usage: string): number {
  process.stderr.write(`${message}\n\n${usage}`);
  return 2;
}
