export { type CaptureResult, captureBatch } from "./batch";
