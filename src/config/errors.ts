/**
 * The process's own edge: a failure whose message is written for the person running the service or a command,
 * saying what is wrong and what to do. It is printed as it is, never with a stack, and the process exits with a
 * failure status. Clients are answered in their edges' own terms instead: the `/batch/` contract's errors, and
 * the query port's ClickHouse errors.
 */
export class OperatorError extends Error {
  override name = "OperatorError";
}

/** A setting that is missing or has a bad value (every one of them, in one message). */
export class ConfigError extends OperatorError {
  override name = "ConfigError";
}
