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

const TYPES = new Set(["track", "page", "screen", "identify", "alias", "group"]);

/** Fields the mapping reads itself; every other one is kept as `$segment_<field>`. */
const READ = new Set([
  "type",
  "event",
  "userId",
  "anonymousId",
  "messageId",
  "timestamp",
  "properties",
  "traits",
  "previousId",
  "groupId",
]);

/**
 * Segment's (and RudderStack's) messages: `track`, `page`, `screen`, `identify`, `alias`, `group`, each with
 * `userId` and/or `anonymousId`, a `messageId`, a `timestamp` and a `context`. The distinct ID is `userId`, else
 * `anonymousId`; a message with both puts the anonymous ID on the user's person, as an `identify` does.
 */
export const segment: Format = {
  name: "segment",
  matches: (record) =>
    isObject(record) &&
    typeof record.type === "string" &&
    TYPES.has(record.type.toLowerCase()) &&
    (record.messageId !== undefined || record.anonymousId !== undefined || record.userId !== undefined),
  records(record: unknown, memory: ImportMemory): Records {
    if (!isObject(record)) return NOT_AN_EVENT;
    const type = typeof record.type === "string" ? record.type.toLowerCase() : undefined;
    const userId = idText(record.userId);
    const anonymousId = idText(record.anonymousId);
    const timestamp = record.timestamp ?? record.originalTimestamp;
    const context = isObject(record.context) ? record.context : {};
    const own = isObject(record.properties) ? record.properties : {};
    const traits = isObject(record.traits) ? record.traits : isObject(context.traits) ? context.traits : undefined;

    const properties: Record<string, unknown> = { ...contextProperties(context), ...own };
    for (const [field, value] of Object.entries(record)) {
      if (!READ.has(field) && value !== null && value !== undefined) properties[`$segment_${field}`] = value;
    }
    let event: unknown = record.event;
    let distinctId = userId ?? anonymousId;
    switch (type) {
      case "page":
        event = "$pageview";
        Object.assign(
          properties,
          defined({ $current_url: own.url, $pathname: own.path, $referrer: own.referrer, $title: own.title }),
        );
        break;
      case "screen":
        event = "$screen";
        Object.assign(properties, defined({ $screen_name: record.name }));
        break;
      case "identify":
        event = userId !== undefined ? "$identify" : "$set";
        if (userId !== undefined && anonymousId !== undefined) {
          properties.$anon_distinct_id = anonymousId;
          memory.firstLink(userId, anonymousId); // linked here: the messages after it need no link of their own
        }
        if (traits !== undefined) properties.$set = traits;
        break;
      case "alias":
        event = "$create_alias";
        distinctId = userId;
        properties.alias = idText(record.previousId);
        break;
      case "group":
        event = "$groupidentify";
        Object.assign(
          properties,
          defined({ $group_type: "company", $group_key: idText(record.groupId), $group_set: traits }),
        );
        break;
    }
    const messageId = idText(record.messageId);
    const item = {
      event,
      distinct_id: distinctId,
      timestamp,
      properties,
      ...(messageId !== undefined && { uuid: sourceUuid("segment", messageId) }),
    };
    const links =
      userId !== undefined && anonymousId !== undefined && type !== "identify" && type !== "alias"
        ? linkEvent("segment", userId, anonymousId, timestamp, memory)
        : [];
    return { items: [...links, item] };
  },
};

/** What Segment's `context` says that PostHog has a property for; the whole context is also kept. */
function contextProperties(context: Record<string, unknown>): Record<string, unknown> {
  const page = isObject(context.page) ? context.page : {};
  const os = isObject(context.os) ? context.os : {};
  const device = isObject(context.device) ? context.device : {};
  const library = isObject(context.library) ? context.library : {};
  const campaign = isObject(context.campaign) ? context.campaign : {};
  const screen = isObject(context.screen) ? context.screen : {};
  return defined({
    $current_url: page.url,
    $pathname: page.path,
    $referrer: page.referrer,
    $title: page.title,
    $ip: context.ip,
    $raw_user_agent: context.userAgent,
    $locale: context.locale,
    $os: os.name,
    $os_version: os.version,
    $device_type: device.type,
    $device_model: device.model,
    $device_manufacturer: device.manufacturer,
    $lib: library.name,
    $lib_version: library.version,
    $screen_width: screen.width,
    $screen_height: screen.height,
    utm_source: campaign.source,
    utm_medium: campaign.medium,
    utm_campaign: campaign.name,
    utm_term: campaign.term,
    utm_content: campaign.content,
  });
}
