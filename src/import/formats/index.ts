export { amplitude } from "./amplitude";
export { detectFormat, FORMATS } from "./detect";
export { FORMAT_NAMES, type Format, type FormatName, IMPORT_NAMESPACE, ImportMemory, type Records } from "./format";
export { mixpanel } from "./mixpanel";
export { posthog } from "./posthog";
export { segment } from "./segment";
