export type { Credentials } from "./auth";
export { QueryEngine } from "./engine";
export { QueryError } from "./errors";
export { handleQuery, type QueryApp } from "./http";
export { serveQuery } from "./listener";
export { type QueryEngineOptions, queryEngineOptions } from "./options";
