export type { Fsync } from "./clickhouse";
export { helpText, settingsTable } from "./docs";
export { ConfigError, OperatorError } from "./errors";
export { MATERIALIZED_BY_DEFAULT, PERSON_MATERIALIZED_BY_DEFAULT } from "./events";
export { type ClickHouseConfig, type Config, loadConfig, redacted } from "./load";
export type { Env, Setting } from "./setting";
export { ENV_NAMES, SETTINGS, type Settings } from "./settings";
export { LEVELS, type Level } from "./telemetry";
export { SERVICE_VERSION } from "./version";
