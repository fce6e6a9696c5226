export { helpText, settingsTable } from "./docs";
export { type ClickHouseConfig, type Config, ConfigError, loadConfig, redacted } from "./load";
export {
  ENV_NAMES,
  type Env,
  FSYNC_LEVELS,
  type Fsync,
  LEVELS,
  type Level,
  SETTINGS,
  type Setting,
  type Settings,
} from "./settings";
