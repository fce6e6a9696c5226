export type { Credentials } from "./auth";
export { QueryEngine, type QueryEngineOptions, queryEngineOptions } from "./engine";
export { QueryError } from "./errors";
export { handleQuery, type QueryApp } from "./http";
export { serveQuery } from "./listener";
