import type { type } from "arktype";

/** The environment as the service reads it. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Where a setting has an effect: always, or only with the embedded engine, or only with a ClickHouse server. */
export type Backend = "any" | "embedded" | "server";

/** One setting: a row of its topic's table (ingest.ts, events.ts, identity.ts, …). */
export interface Setting<T> {
  /** The environment variable. */
  readonly env: string;
  /** Parses and checks the variable's text (trimmed, unless the value is a secret). */
  readonly parse: (text: string) => T | type.errors;
  /** The value when the variable is unset or empty; computed from the environment where it depends on it. */
  readonly default: T | ((env: Env) => T);
  /** The default in words (Markdown), where it is not a value to show as it is. */
  readonly shownDefault?: string;
  /** One line: what it does. */
  readonly help: string;
  readonly backend: Backend;
  /** A value set for the other backend is refused with this reason, rather than ignored (ignoring it would mislead). */
  readonly refusedElsewhere?: string;
  /** How it appears in the logged configuration: left out, or only counted. Untrimmed when left out. */
  readonly redact?: "omit" | "count";
}

/** A topic's settings, by the key `Config` gives each. */
export type Topic = Readonly<Record<string, Setting<unknown>>>;

/** A setting as declared: its value's type inferred from (or given to) the parser and the default together. */
export function setting<T>(spec: Setting<T>): Setting<T> {
  return spec;
}
