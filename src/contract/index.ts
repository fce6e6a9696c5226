export { asIngestError, ERROR_CODES, type ErrorCode, fail, IngestError } from "./errors";
export {
  type CapturedEvent,
  type CaptureResult,
  columnText,
  distinctIdFrom,
  type EventLocation,
  type EventSink,
  GEO_PROPERTIES,
  type GeoProperty,
  identifierFrom,
  LIMITS,
  NIL_UUID,
  type Properties,
  type Timestamp,
  type TopLevelSets,
} from "./event";
export { isObject, isRawNumber, nestsDeeperThan, numberText, parseJson, type RawNumber } from "./json";
