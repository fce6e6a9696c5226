export { type AdminApp, FORGET_PATH, handleAdmin, MAX_FORGET_IDS, serveAdmin } from "./admin";
export { type BodyEncoding, BodyError, type BodyFailure, readBody, requestUrl } from "./body";
export { serveMetrics } from "./metrics";
export { type App, handle, serve } from "./server";
