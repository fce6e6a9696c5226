import { isObject } from "../../contract";
import {
  defined,
  type Format,
  type ImportMemory,
  idText,
  linkEvent,
  NOT_AN_EVENT,
  type Records,
  sourceUuid,
} from "./format";

const EVENT_NAMES: Readonly<Record<string, string>> = {
  "[Amplitude] Page Viewed": "$pageview",
  "[Amplitude] Element Clicked": "$autocapture",
  "[Amplitude] Element Changed": "$autocapture",
  // Amplitude's identify call: a property update; linking and identifying come from user_id beside device_id
  $identify: "$set",
};

/** Event properties of Amplitude's browser SDK copied under PostHog's names. */
const COPIED: Readonly<Record<string, string>> = {
  "[Amplitude] Page URL": "$current_url",
  "[Amplitude] Page Path": "$pathname",
  "[Amplitude] Page Domain": "$host",
  "[Amplitude] Page Title": "$title",
  referrer: "$referrer",
  referring_domain: "$referring_domain",
};

/** Columns of the export with a PostHog property of their own. */
const COLUMNS: Readonly<Record<string, string>> = {
  ip_address: "$ip",
  country: "$geoip_country_name",
  city: "$geoip_city_name",
  region: "$geoip_subdivision_1_name",
  os_name: "$os",
  os_version: "$os_version",
  device_model: "$device_model",
  device_manufacturer: "$device_manufacturer",
  language: "$locale",
};

/** Columns the mapping reads itself; every other one is kept as `$amplitude_<column>`. */
const READ = new Set([
  "event_type",
  "user_id",
  "device_id",
  "event_time",
  "client_event_time",
  "event_properties",
  "user_properties",
  "uuid",
  "insert_id",
  "$insert_id",
  "session_id",
  ...Object.keys(COLUMNS),
]);

/** Amplitude's user property operations and PostHog's equivalents; the others have none. */
const OPERATIONS: Readonly<Record<string, string>> = { $set: "$set", $setOnce: "$set_once", $unset: "$unset" };

/**
 * Amplitude's export (one event a line: `event_type`, `user_id`, `device_id`, `event_time`, `event_properties`,
 * `user_properties`, `uuid`, `$insert_id`, …). The distinct ID is `user_id`, else `device_id`; an event with both
 * puts the device on the user's person. `user_properties` is either the user's properties as of the event (set on
 * the person when they changed since the ID's previous event) or operations (`$set`, `$setOnce`, `$unset`).
 */
export const amplitude: Format = {
  name: "amplitude",
  matches: (record) =>
    isObject(record) &&
    typeof record.event_type === "string" &&
    (record.device_id !== undefined || record.user_id !== undefined || record.event_time !== undefined),
  records(record: unknown, memory: ImportMemory): Records {
    if (!isObject(record)) return NOT_AN_EVENT;
    const userId = idText(record.user_id);
    const deviceId = idText(record.device_id);
    const distinctId = userId ?? deviceId;
    const timestamp = record.event_time ?? record.client_event_time;
    const eventProperties = isObject(record.event_properties) ? record.event_properties : {};

    const properties: Record<string, unknown> = { ...eventProperties };
    for (const [from, to] of Object.entries(COPIED)) {
      if (eventProperties[from] !== undefined) properties[to] = eventProperties[from];
    }
    for (const [column, value] of Object.entries(record)) {
      if (value === null || value === undefined || value === "" || isEmptyObject(value)) continue;
      const name = COLUMNS[column] ?? (READ.has(column) ? undefined : `$amplitude_${bareName(column)}`);
      if (name !== undefined) properties[name] = value;
    }
    if (deviceId !== undefined) properties.$device_id = deviceId;
    const sessionId = idText(record.session_id);
    if (sessionId !== undefined && sessionId !== "-1") properties.$session_id = sessionId;
    Object.assign(properties, personUpdates(record.user_properties, distinctId, memory));

    const uuid = idText(record.uuid);
    const insertId = idText(record.insert_id ?? record.$insert_id);
    const item = {
      event: typeof record.event_type === "string" ? (EVENT_NAMES[record.event_type] ?? record.event_type) : undefined,
      distinct_id: distinctId,
      timestamp,
      properties,
      ...(uuid !== undefined
        ? { uuid: sourceUuid("amplitude", uuid) }
        : insertId !== undefined && { uuid: sourceUuid("amplitude", userId ?? "", deviceId ?? "", insertId) }),
    };
    const links =
      userId !== undefined && deviceId !== undefined ? linkEvent("amplitude", userId, deviceId, timestamp, memory) : [];
    return { items: [...links, item] };
  },
};

/** `$set` / `$set_once` / `$unset` from `user_properties`, and other operations kept, unapplied. */
function personUpdates(
  userProperties: unknown,
  distinctId: string | undefined,
  memory: ImportMemory,
): Record<string, unknown> {
  if (!isObject(userProperties) || Object.keys(userProperties).length === 0) return {};
  const keys = Object.keys(userProperties);
  if (!keys.some((key) => key.startsWith("$"))) {
    // the user's properties as of this event: set only when they changed, or each event would write them all again
    return distinctId === undefined || memory.setChanged(distinctId, userProperties) ? { $set: userProperties } : {};
  }
  const updates: Record<string, unknown> = {};
  const unapplied: Record<string, unknown> = {};
  for (const key of keys) {
    if (OPERATIONS[key] !== undefined) updates[OPERATIONS[key]] = userProperties[key];
    else unapplied[key] = userProperties[key];
  }
  return {
    ...updates,
    ...defined({ $amplitude_user_properties: keys.length > Object.keys(updates).length ? unapplied : undefined }),
  };
}

function isEmptyObject(value: unknown): boolean {
  return isObject(value) && Object.keys(value).length === 0;
}

/** `amplitude_id` → `id`, `$schema` → `schema`: the column's name under the `$amplitude_` prefix. */
function bareName(column: string): string {
  return column.replace(/^\$/, "").replace(/^amplitude_/, "");
}
