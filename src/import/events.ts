import { type AcceptedEvent, type Dropped, type Invalid, verdictOf } from "../capture";
import { isObject } from "../contract";
import { IMPORT_NAMESPACE } from "./formats";

/** An event of the import, ready to send: as a `/batch/` item and as the service accepted it. */
export interface ImportEvent {
  readonly item: Readonly<Record<string, unknown>>;
  readonly accepted: AcceptedEvent;
}

/** Why an item is not imported: what `/batch/` would drop or refuse, or no timestamp (the summary counts them). */
export type Rejection = Dropped | Invalid | "no timestamp";

/**
 * Checks an item as `/batch/` would, plus the one thing an import must have: a timestamp (an event without one
 * happened "now", which a re-run would make another event). The event keeps its own UUID; one that has none gets
 * a UUIDv5 of the line's number, the item's place in it and the line's text, so importing the same file again
 * derives the same UUIDs (docs/import.md#exactly-once).
 */
export function importEvent(
  item: unknown,
  where: { readonly line: number; readonly index: number; readonly text: string },
): ImportEvent | Rejection {
  if (!isObject(item)) return "not an event";
  if (item.timestamp === undefined || item.timestamp === null) return "no timestamp";
  // the verdict does not depend on the UUID: the item is checked once, and given one only if it has none usable
  const verdict = verdictOf(item);
  if (verdict.kind !== "accepted") return verdict.reason;
  if (verdict.event.uuid !== undefined) return { item, accepted: verdict.event };
  const uuid = Bun.randomUUIDv5(`${where.line}:${where.index}:${where.text}`, IMPORT_NAMESPACE);
  return { item: { ...item, uuid }, accepted: { ...verdict.event, uuid } };
}
