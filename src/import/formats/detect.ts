import { amplitude } from "./amplitude";
import type { Format, FormatName } from "./format";
import { mixpanel } from "./mixpanel";
import { posthog } from "./posthog";
import { segment } from "./segment";

export const FORMATS: Readonly<Record<FormatName, Format>> = { posthog, mixpanel, amplitude, segment };

/** Most specific first: PostHog's shapes are what is left. */
const DETECTION_ORDER: readonly Format[] = [segment, amplitude, mixpanel, posthog];

/**
 * The format of a file, from its first line that is JSON: that of the first event in it (the first item of an
 * array or `/batch/` body, for PostHog's shapes).
 */
export function detectFormat(record: unknown): Format {
  const first = Array.isArray(record) ? record[0] : record;
  return DETECTION_ORDER.find((format) => format.matches(first)) ?? posthog;
}
