/** Writes a command's failure to stderr, as the operator reads it, and returns its exit status: 1. */
export function failure(message: string): number {
  process.stderr.write(`${message}\n`);
  return 1;
}
