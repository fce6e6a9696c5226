import { ADMIN } from "./admin";
import { CLICKHOUSE } from "./clickhouse";
import { EVENTS } from "./events";
import { IDENTITY } from "./identity";
import { INGEST } from "./ingest";
import { QUERY_PORT } from "./query-port";
import type { Setting } from "./setting";
import { TELEMETRY } from "./telemetry";

/**
 * Every setting the service reads, declared once: its environment variable, how its text is parsed and checked,
 * its default, a one-line help, and which backend it applies to. `Config`, the startup validation, `--help` and
 * the README's configuration table are all derived from this table (docs/operations.md#configuration).
 *
 * Each topic declares its settings in a table of its own: ingest.ts (the listener and the writes), events.ts,
 * identity.ts, telemetry.ts, query-port.ts, admin.ts (the operator's door), clickhouse.ts (where the data goes). A new setting goes in its
 * topic's table.
 */

/** Every topic's settings together: what `SETTINGS` must hold, each key once. */
type Declared = typeof INGEST &
  typeof EVENTS &
  typeof IDENTITY &
  typeof TELEMETRY &
  typeof QUERY_PORT &
  typeof ADMIN &
  typeof CLICKHOUSE;

/** In the order `--help` and the README list them, a topic at a time. A topic left out here fails to compile. */
export const SETTINGS = {
  ...INGEST,
  ...EVENTS,
  ...IDENTITY,
  ...TELEMETRY,
  ...QUERY_PORT,
  ...ADMIN,
  ...CLICKHOUSE,
} as const satisfies Declared;

export type SettingKey = keyof typeof SETTINGS;

/** Every setting's value, as parsed: what `Config` is made of. */
export type Settings = { readonly [K in SettingKey]: (typeof SETTINGS)[K] extends Setting<infer T> ? T : never };

/** The variables this service reads; nothing else in the environment is looked at (but `HOME`, for a default). */
export const ENV_NAMES: readonly string[] = Object.values(SETTINGS).map((s) => s.env);
