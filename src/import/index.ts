export { Checkpoint, type Position } from "./checkpoint";
export { type ImportEvent, importEvent, type Rejection } from "./events";
export { FORMAT_NAMES, type FormatName } from "./formats";
export { ImportError } from "./read/source";
export { type ImportOptions, type Progress, type Reason, type Rejected, runImport, type Summary } from "./run";
export { directTarget, httpTarget, type ImportTarget } from "./targets";
