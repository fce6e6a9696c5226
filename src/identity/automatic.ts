import { type EventLocation, GEO_PROPERTIES, type Properties } from "../contract";

/**
 * Person properties PostHog's ingestion sets from what SDKs put on events (its `eventToPersonProperties`): each
 * one an event carries is `$set` on the person, and `$set_once` as `$initial_<key without $>` (first touch).
 */
const APP = ["$app_build", "$app_name", "$app_namespace", "$app_version"] as const;

/** The page, browser, device and screen: they change with every page (PostHog's `FILTERED_PERSON_UPDATE_PROPERTIES`). */
const PAGE_AND_DEVICE = [
  "$browser",
  "$browser_version",
  "$device_type",
  "$current_url",
  "$pathname",
  "$os",
  "$os_version",
  "$referring_domain",
  "$referrer",
  "$screen_height",
  "$screen_width",
  "$viewport_height",
  "$viewport_width",
  "$raw_user_agent",
] as const;

/** Campaign parameters posthog-js reads from the URL (its `CAMPAIGN_PARAMS`, and PostHog's person-only extras). */
const CAMPAIGN = [
  "utm_source",
  "utm_medium",
  "utm_campaign",
  "utm_content",
  "utm_name",
  "utm_term",
  "gclid",
  "gad_source",
  "gclsrc",
  "dclid",
  "gbraid",
  "wbraid",
  "fbclid",
  "msclkid",
  "twclid",
  "li_fat_id",
  "mc_cid",
  "igshid",
  "ttclid",
  "rdt_cid",
  "irclid",
  "_kx",
  "epik",
  "qclid",
  "sccid",
] as const;

/** A location by PostHog's names (`GEO_PROPERTIES`): strings, and numbers for coordinates. */
export type PersonLocation = EventLocation["properties"];

/**
 * The location an event gives its person: its own `$geoip_*` strings and numbers, and the keys GeoIP found that
 * it lacks (`located`); undefined if neither says anything. Where the event came from moves with the user, so it
 * churns like a page; it goes on the person as one `location` fact (facts.ts), not a fact a key.
 */
export function personLocationOf(
  properties: Properties,
  located: PersonLocation | undefined,
): PersonLocation | undefined {
  let own: Record<string, string | number> | undefined;
  for (const key of GEO_PROPERTIES) {
    const value = properties[key];
    if (typeof value !== "string" && typeof value !== "number") continue;
    own ??= {};
    own[key] = value;
  }
  return own === undefined ? located : { ...located, ...own };
}

export const AUTOMATIC_KEYS: readonly string[] = [...APP, ...PAGE_AND_DEVICE, ...CAMPAIGN];

/**
 * Keys that never make a person write on their own: they go in with an event that changes something else, as the
 * location does (docs/identity.md#automatic-person-properties).
 */
const CHURNING = new Set<string>(PAGE_AND_DEVICE);

/** Whether a key is one of those that change on every page and never make a person write alone. */
export const churns = (key: string): boolean => CHURNING.has(key);

/** A key's first-touch name, `$initial_<key without $>`, set once. */
export const initialKey = (key: string): string => `$initial_${key.replace("$", "")}`;

const INITIAL = new Map(AUTOMATIC_KEYS.map((key) => [key, initialKey(key)]));

/** What an event's own properties say of its person, PostHog's way. */
export interface AutomaticUpdates {
  readonly set: Properties;
  readonly setOnce: Properties;
  /** Whether any key is one that makes a person write by itself (a campaign parameter, an app's version, …). */
  readonly changes: boolean;
}

/**
 * The automatic person updates of an event's properties, or undefined if it carries none of the keys. A server
 * SDK's event (`$is_server: true`) says nothing of the user's `$os`. `$os_name`, which some SDKs send instead
 * of `$os`, stands in for it. `$initial_*` never takes a null: SDKs send absent campaign parameters as null, and
 * a null first touch would keep the real one out for good.
 */
export function automaticUpdatesOf(properties: Properties): AutomaticUpdates | undefined {
  const server = properties.$is_server === true;
  const set: Record<string, unknown> = {};
  const setOnce: Record<string, unknown> = {};
  let found = false;
  let changes = false;
  for (const key of AUTOMATIC_KEYS) {
    const value = key === "$os" && !Object.hasOwn(properties, "$os") ? properties.$os_name : properties[key];
    if (value === undefined || (server && (key === "$os" || key === "$os_version"))) continue;
    found = true;
    set[key] = value;
    if (value !== null) setOnce[INITIAL.get(key)!] = value;
    if (!CHURNING.has(key)) changes = true;
  }
  return found ? { set, setOnce, changes } : undefined;
}
