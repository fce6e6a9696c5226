export { Checkpoint, type Position } from "./checkpoint";
export { ImportError } from "./errors";
export { type ImportEvent, importEvent, type Rejection } from "./events";
export { FORMAT_NAMES, type FormatName } from "./formats";
export { type ImportOptions, type Progress, type Reason, type Rejected, runImport, type Summary } from "./run";
export { directTarget, httpTarget, type ImportTarget } from "./targets";
