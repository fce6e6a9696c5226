export { describeError, LEVELS, type Level, Logger } from "./log";
export { Metrics, type PartsReadOptions, type ScrapeSources } from "./metrics";
export { queryObserver, requestObserver, SLOW_FLUSH_SECONDS, storageObserver } from "./observers";
