export { type AdminApp, FORGET_PATH, handleAdmin, MAX_FORGET_IDS, serveAdmin } from "./admin";
export { BACKUP_PATH } from "./admin-backup";
export { type BodyEncoding, BodyError, type BodyFailure, readBody, requestUrl } from "./body";
export { serveMetrics } from "./metrics";
export { type App, handle, serve } from "./server";
