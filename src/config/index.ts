export { helpText, settingsTable } from "./docs";
export { ConfigError, OperatorError } from "./errors";
export { type ClickHouseConfig, type Config, loadConfig, redacted } from "./load";
export {
  ENV_NAMES,
  type Env,
  type Fsync,
  LEVELS,
  type Level,
  SETTINGS,
  type Setting,
  type Settings,
} from "./settings";
