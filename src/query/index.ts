export type { Credentials } from "./auth";
export { QueryEngine, type QueryEngineOptions, queryEngineOptions } from "./engine";
export { QueryError } from "./errors";
export { handleQuery, type QueryAnswer, type QueryApp, type QueryObserver, type QueryOutcome } from "./http";
