import { type AcceptedEvent, acceptEvents, uuidOf } from "../capture/validate";
import { IngestError } from "../errors";
import { isObject } from "../json";
import { IMPORT_NAMESPACE } from "./formats";

/** An event of the import, ready to send: as a `/batch/` item and as the service accepted it. */
export interface ImportEvent {
  readonly item: Readonly<Record<string, unknown>>;
  readonly accepted: AcceptedEvent;
}

/** Why an item is not imported, one of a few reasons (the summary counts them). */
export type Rejection =
  | "not an event"
  | "no event name"
  | "no distinct ID"
  | "no timestamp"
  | "invalid timestamp"
  | "nested too deep";

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
  const withUuid =
    uuidOf(item.uuid) !== undefined
      ? item
      : {
          ...item,
          uuid: Bun.randomUUIDv5(`${where.line}:${where.index}:${where.text}`, IMPORT_NAMESPACE),
        };
  let accepted: AcceptedEvent | undefined;
  try {
    accepted = acceptEvents([withUuid]).events[0];
  } catch (error) {
    if (error instanceof IngestError && error.code === "invalid_timestamp") return "invalid timestamp";
    if (error instanceof IngestError && error.code === "too_deep") return "nested too deep";
    throw error;
  }
  if (accepted === undefined)
    return typeof item.event === "string" && item.event !== "" ? "no distinct ID" : "no event name";
  return { item: withUuid, accepted };
}
