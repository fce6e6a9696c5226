import { LEVELS, type Level } from "../config";

export type Fields = Record<string, unknown>;

/**
 * One JSON object per line: `time`, `level`, `msg`, then the fields. Callers pass only what is safe to keep:
 * never event payloads, never api keys.
 */
export class Logger {
  readonly #threshold: number;

  constructor(
    level: Level,
    private readonly write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
  ) {
    this.#threshold = LEVELS.indexOf(level);
  }

  debug(msg: string, fields?: Fields): void {
    this.#log("debug", msg, fields);
  }

  info(msg: string, fields?: Fields): void {
    this.#log("info", msg, fields);
  }

  warn(msg: string, fields?: Fields): void {
    this.#log("warn", msg, fields);
  }

  error(msg: string, fields?: Fields): void {
    this.#log("error", msg, fields);
  }

  #log(level: Level, msg: string, fields: Fields = {}): void {
    if (LEVELS.indexOf(level) < this.#threshold) return;
    this.write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }));
  }
}

/**
 * What may be logged of an error: its kind, never a message that could quote data. ClickHouse's messages quote
 * the rows they failed on, so of a ClickHouse error only its type and code are kept.
 */
export function describeError(error: unknown): Fields {
  if (!(error instanceof Error)) return { error: typeof error };
  const { code, type } = error as { code?: unknown; type?: unknown };
  if (typeof type === "string") return { error: error.name, type, code };
  return { error: error.name, ...(code === undefined ? {} : { code }), message: error.message.slice(0, 200) };
}
