export { type BodyEncoding, BodyError, type BodyFailure, readBody, requestUrl } from "./body";
export { type App, handle, serve } from "./server";
