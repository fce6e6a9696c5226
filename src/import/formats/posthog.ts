import { isObject, parseJson } from "../../contract";
import { type Format, NOT_AN_EVENT, type Records } from "./format";

/**
 * PostHog's own shapes: an event as `/batch/` takes it, an array of them, a `/batch/` body, or a row of PostHog's
 * event export, whose `properties` (and `set`, `set_once`) may be JSON text and whose `set` / `set_once` are the
 * event's `$set` / `$set_once` (docs/import.md#posthog). What no other format claims is read as this one.
 */
export const posthog: Format = {
  name: "posthog",
  matches: () => true,
  records(record: unknown): Records {
    if (Array.isArray(record)) return { items: record.map(exportRow) };
    if (!isObject(record)) return NOT_AN_EVENT;
    if (Array.isArray(record.batch)) return { items: record.batch.map(exportRow) };
    return { items: [exportRow(record)] };
  },
};

/** An export row as a batch item; anything else unchanged. */
function exportRow(item: unknown): unknown {
  if (!isObject(item)) return item;
  const properties = jsonText(item.properties);
  const set = jsonText(item.set);
  const setOnce = jsonText(item.set_once);
  if (properties === item.properties && set === undefined && setOnce === undefined) return item;
  const { set: _set, set_once: _setOnce, ...rest } = item;
  return {
    ...rest,
    properties,
    ...(isObject(set) && item.$set === undefined && { $set: set }),
    ...(isObject(setOnce) && item.$set_once === undefined && { $set_once: setOnce }),
  };
}

/** A value that is JSON text of an object, parsed; anything else as it is. */
function jsonText(value: unknown): unknown {
  if (typeof value !== "string" || !value.trimStart().startsWith("{")) return value;
  try {
    return parseJson(value);
  } catch {
    return value;
  }
}
