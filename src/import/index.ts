export { type ImportEvent, importEvent, type Rejection } from "./events";
export { type ImportOptions, type Reason, type Rejected, runImport, type Summary } from "./run";
export { ImportError } from "./source";
export { directTarget, httpTarget, type ImportTarget } from "./targets";
