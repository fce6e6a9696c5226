/** Writes a command's error to stderr, and returns its exit status: 1. */
export function fail(message: string): number {
  process.stderr.write(`${message}\n`);
  return 1;
}
