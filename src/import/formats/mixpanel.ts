import { isObject } from "../../contract";
import { type Format, type ImportMemory, idText, linkEvent, NOT_AN_EVENT, type Records, sourceUuid } from "./format";

/** Mixpanel's names for what PostHog calls otherwise: its geolocation properties. */
const RENAMED: Readonly<Record<string, string>> = {
  $city: "$geoip_city_name",
  $region: "$geoip_subdivision_1_name",
  mp_country_code: "$geoip_country_code",
};

const EVENT_NAMES: Readonly<Record<string, string>> = { $mp_web_page_view: "$pageview" };

/**
 * Mixpanel's raw export: `{"event", "properties": {"time", "distinct_id", "$insert_id", …}}`, `time` in seconds or
 * milliseconds. Identity comes three ways (docs/import.md#mixpanel): Simplified ID Merge's `$user_id` beside
 * `$device_id` (the device's anonymous events have the distinct ID `$device:<id>`), Original ID Merge's
 * `$identify` (`$identified_id`, `$anon_id`) and `$merge` (`$distinct_ids`), and `$create_alias`, which PostHog
 * names the same.
 */
export const mixpanel: Format = {
  name: "mixpanel",
  matches: (record) =>
    isObject(record) &&
    typeof record.event === "string" &&
    isObject(record.properties) &&
    record.properties.time !== undefined &&
    record.distinct_id === undefined &&
    record.timestamp === undefined,
  records(record: unknown, memory: ImportMemory): Records {
    if (!isObject(record) || !isObject(record.properties)) return NOT_AN_EVENT;
    const { time, distinct_id, $insert_id, ...rest } = record.properties;
    const properties: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(rest)) properties[RENAMED[key] ?? key] = value;
    const timestamp = mixpanelTime(time);
    let event = typeof record.event === "string" ? (EVENT_NAMES[record.event] ?? record.event) : record.event;
    let distinctId = idText(distinct_id);

    if (event === "$identify" && idText(properties.$anon_id) !== undefined) {
      distinctId = idText(properties.$identified_id) ?? distinctId;
      properties.$anon_distinct_id = idText(properties.$anon_id);
    } else if (event === "$merge" && Array.isArray(properties.$distinct_ids)) {
      const [first, second] = properties.$distinct_ids.map(idText);
      if (first !== undefined && second !== undefined) {
        event = "$create_alias";
        distinctId = first;
        properties.alias = second;
      }
    }
    const insertId = idText($insert_id);
    const item = {
      event,
      distinct_id: distinctId,
      timestamp,
      properties,
      // Mixpanel's own deduplication key: name, distinct ID, time and $insert_id
      ...(insertId !== undefined && {
        uuid: sourceUuid("mixpanel", String(record.event), distinctId ?? "", String(time), insertId),
      }),
    };
    const userId = idText(properties.$user_id);
    const deviceId = idText(properties.$device_id);
    const links =
      userId !== undefined && deviceId !== undefined && event !== "$identify"
        ? linkEvent("mixpanel", userId, `$device:${deviceId}`, timestamp, memory)
        : [];
    return { items: [...links, item] };
  },
};

/**
 * `time` as an ISO timestamp: seconds since the epoch, or milliseconds when it is too large to be seconds (after
 * the year 5138). Anything else is passed on for validation to refuse.
 */
function mixpanelTime(time: unknown): unknown {
  if (typeof time !== "number" || !Number.isFinite(time)) return time;
  const date = new Date(Math.abs(time) >= 1e11 ? time : time * 1000);
  return Number.isNaN(date.getTime()) ? time : date.toISOString();
}
