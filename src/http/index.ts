export { type BodyEncoding, BodyError, type BodyFailure, readBody, requestUrl } from "./body";
export { serveMetrics } from "./metrics";
export { type App, handle, serve } from "./server";
