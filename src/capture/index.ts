export { type BatchHead, captureBatch, checkHead, ingestAccepted } from "./batch";
export { GeoIp, openGeoIp } from "./geoip";
export { normalize } from "./normalize";
export { type Claim, PendingBytes } from "./pending";
export { parseTimestamp, timestampFromDate } from "./timestamp";
export {
  type AcceptedEvent,
  acceptEvents,
  type Dropped,
  type Invalid,
  uuidOf,
  type Verdict,
  verdictOf,
} from "./validate";
