import { type } from "arktype";
import { flag, path, propertyKeys, proxies } from "./parse";
import { setting, type Topic } from "./setting";

/**
 * The properties posthog-js puts on events that insights and web analytics break down by most; the page's URL and
 * host are columns of `events` already (`current_url`, `host`).
 */
export const MATERIALIZED_BY_DEFAULT: readonly string[] = [
  "$browser",
  "$os",
  "$device_type",
  "$pathname",
  "$referring_domain",
  "utm_source",
  "utm_medium",
  "utm_campaign",
  "$lib",
];

/**
 * The person properties posthog-js sets once a person (`$set_once`) that insights break down by most: where a
 * person came from and on what. Each is a `pmat_<key>` column; they parse `person_properties` on insert, which is
 * empty unless `PERSONS_ON_EVENTS=1` (docs/analytics.md#person-property-columns).
 */
export const PERSON_MATERIALIZED_BY_DEFAULT: readonly string[] = [
  "$initial_browser",
  "$initial_os",
  "$initial_referring_domain",
  "$initial_utm_source",
];

/**
 * Events: what is stored of each one beside what its SDK sent: its time corrected or not, its properties typed,
 * its client's address (through which proxies) and where that is (src/capture, the events table), and how long
 * events and sessions are kept (src/storage/retention.ts).
 */
export const EVENTS = {
  correctClockSkew: setting({
    env: "CORRECT_CLOCK_SKEW",
    parse: flag,
    default: false,
    shownDefault: "`0`",
    help: "`1`: move each `timestamp` by the client clock's error that `sent_at` shows, as PostHog does. `0`: store timestamps as sent.",
    backend: "any",
  }),
  settleAfterS: setting({
    env: "SETTLE_AFTER_S",
    parse: type("string.integer.parse").to("0 <= number.integer <= 604800"),
    default: 3600,
    help: "How long a day of events (a partition of `events`) takes no new event before it is merged into one part, which `events_resolved` reads without merging copies (0: never; not on a cluster; docs/analytics.md#the-copies).",
    backend: "any",
  }),
  typedProperties: setting({
    env: "TYPED_PROPERTIES",
    parse: flag,
    default: false,
    shownDefault: "`0`",
    help: "`1`: add `events.properties_typed`, the properties in the engine's JSON type, computed as events are inserted: property reads 2–10× faster, ingest of posthog-js events about 40% slower (docs/analytics.md). `0`: none added; one that exists is kept until dropped.",
    backend: "any",
  }),
  materializedProperties: setting<readonly string[]>({
    env: "MATERIALIZED_PROPERTIES",
    parse: propertyKeys,
    default: MATERIALIZED_BY_DEFAULT,
    shownDefault: MATERIALIZED_BY_DEFAULT.map((key) => `\`${key}\``).join(","),
    help: "Comma-separated property keys each stored in a column of `events` as well, `mat_<key>` (its value as text, `''` where absent), computed as events are inserted: a query naming one reads a column instead of parsing every event's properties (docs/analytics.md#property-columns). `none`: none added. A column that exists is kept until dropped.",
    backend: "any",
  }),
  materializedPersonProperties: setting<readonly string[]>({
    env: "MATERIALIZED_PERSON_PROPERTIES",
    parse: propertyKeys,
    default: PERSON_MATERIALIZED_BY_DEFAULT,
    shownDefault: PERSON_MATERIALIZED_BY_DEFAULT.map((key) => `\`${key}\``).join(","),
    help: "Comma-separated person property keys each stored in a column of `events` as well, `pmat_<key>` (the value in `person_properties` as text, `''` where absent, and always with `PERSONS_ON_EVENTS=0`): a breakdown by one reads a column instead of parsing every event's person (docs/analytics.md#person-property-columns). By default where a person came from and on what; they cost about 8 µs of CPU an event with `PERSONS_ON_EVENTS=1`, none measurable without. `none`: none added. A column that exists is kept until dropped.",
    backend: "any",
  }),
  personsOnEvents: setting({
    env: "PERSONS_ON_EVENTS",
    parse: flag,
    default: false,
    shownDefault: "`0`",
    help: "`1`: store on each event its person's properties and creation time as its flush left them (`events.person_properties`, `person_created_at`), as PostHog does: person breakdowns without a join; posthog-js events take 1.7× the disk and ingest ×0.83 (docs/analytics.md#persons-on-events). `0`: empty.",
    backend: "any",
  }),
  captureIp: setting({
    env: "CAPTURE_IP",
    parse: flag,
    default: true,
    shownDefault: "`1`",
    help: "`1`: store each event's client address in `events.ip` (the event's own `$ip`, else the connection's). `0`: store none.",
    backend: "any",
  }),
  geoip: setting({
    env: "GEOIP",
    parse: flag,
    default: true,
    shownDefault: "`1`",
    help: "`1`: locate events from public addresses: PostHog's `$geoip_*` in `events.geoip` and in the properties of `events_resolved` (and on their person, with `PERSON_AUTO_PROPERTIES`). `0`: none.",
    backend: "any",
  }),
  geoipDatabase: setting<string | undefined>({
    env: "GEOIP_DATABASE",
    parse: path,
    default: undefined,
    shownDefault: "bundled: DB-IP country",
    help: "A MaxMind DB file (GeoIP2 or GeoLite2 City, or Country) to locate addresses with, instead of the bundled country database.",
    backend: "any",
  }),
  trustedProxies: setting<readonly string[]>({
    env: "TRUSTED_PROXIES",
    parse: proxies,
    default: [],
    shownDefault: "none",
    help: "Comma-separated addresses or CIDR ranges of your load balancers: from these, the client is the nearest untrusted address in `X-Forwarded-For`.",
    backend: "any",
  }),
  eventsRetentionDays: setting<number | undefined>({
    env: "EVENTS_RETENTION_DAYS",
    // a century at most: the contract's timestamps span 1900–2299
    parse: type("string.integer.parse").to("1 <= number.integer <= 36500"),
    default: undefined,
    shownDefault: "keep everything",
    help: "Keep events and sessions this many days, then drop them: old months at startup, the rest by a table TTL. Persons, their links and properties are kept (docs/operations.md#retention).",
    backend: "any",
  }),
} as const satisfies Topic;
