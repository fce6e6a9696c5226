import { literal } from "../sql";

/** A timestamp column's type: microseconds, UTC. */
export const UTC_MICROS = "DateTime64(6, 'UTC')";

/**
 * What a session keeps of its entry event, a column each (`entry_<name>`, as PostHog's sessions v3 names them): the
 * properties web analytics breaks sessions down by, then the advertising click IDs PostHog lists. Name → the event
 * property it comes from. Each column is the first value among the session's views that have one, as PostHog's
 * are (its argMin skips nulls): the entry event's, unless that one lacks the property. A view that lacks it stores
 * no state (a byte), where an empty value would store its 24-byte key, and most views lack most of the 27.
 */
const ENTRY: Readonly<Record<string, string>> = {
  referring_domain: "$referring_domain",
  utm_source: "utm_source",
  utm_medium: "utm_medium",
  utm_campaign: "utm_campaign",
  utm_term: "utm_term",
  utm_content: "utm_content",
  browser: "$browser",
  os: "$os",
  device_type: "$device_type",
  ...Object.fromEntries(
    [
      ...["gclid", "gad_source", "gclsrc", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "twclid", "li_fat_id"],
      ...["mc_cid", "igshid", "ttclid", "irclid", "epik", "qclid", "sccid", "_kx"],
    ].map((id) => [id, id]),
  ),
};

/** The entry's columns → the event property each comes from, in `ENTRY`'s order. */
export const ENTRY_PROPERTIES: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(ENTRY).map(([name, property]) => [`entry_${name}`, property]),
);
const ENTRY_COLUMNS = Object.keys(ENTRY_PROPERTIES);

/**
 * The entry properties of an event that is a view, else empty ones (so that an empty value stands for "not a view or
 * none"): one tuple from one `JSONExtract` (the parse is most of what the entry costs), whose elements the entry's
 * columns take by position.
 */
const entryOf = (isView: string): string => {
  const parsed = literal(
    `Tuple(${Object.values(ENTRY)
      .map((key) => `\`${key}\` String`)
      .join(", ")})`,
  );
  return `if(${isView}, JSONExtract(properties, ${parsed}), JSONExtract('{}', ${parsed}))`;
};

/**
 * A session's entry event is its first pageview or screen. The argMin key that orders them: (timestamp, uuid); the
 * uuid settles a tie, so any order of inserts and merges keeps the same entry.
 */
const ENTRY_KEY_TYPE = `Tuple(${UTC_MICROS}, UUID)`;
const ENTRY_KEY = "(timestamp, uuid)";
const IS_VIEW = "event IN ('$pageview', '$screen')";

/**
 * An event's country: its own `$geoip_country_code` where it sent one (which the service's location then leaves
 * out), else where the service located it. The text is searched before it is parsed: few events carry the key.
 */
const COUNTRY = `if(position(properties, '"$geoip_country_code"') > 0 AND JSONHas(properties, '$geoip_country_code'),
        JSONExtractString(properties, '$geoip_country_code'), JSONExtractString(geoip, '$geoip_country_code'))`;

/**
 * A count: the set of the 32-bit hashes of the events' uuids (`uniq`), so an event sent again adds nothing. It is
 * exact but for two of a session's uuids that share a hash (counted once) and for a session with over 65,536 events
 * of a kind (then sampled). `uniqExact` kept the uuids themselves: four times the bytes, and the web overview over
 * a million sessions passed the query port's memory limit (bench/README.md#queries).
 */
const COUNT = "AggregateFunction(uniq, UUID)";

/** The `sessions` table's columns, name → type as ClickHouse reports it. */
export const SESSION_COLUMNS: Readonly<Record<string, string>> = {
  session_id: "String",
  distinct_id: `AggregateFunction(argMin, String, ${UTC_MICROS})`,
  min_timestamp: `SimpleAggregateFunction(min, ${UTC_MICROS})`,
  max_timestamp: `SimpleAggregateFunction(max, ${UTC_MICROS})`,
  event_count: COUNT,
  pageview_count: COUNT,
  entry_url: `AggregateFunction(argMin, String, ${UTC_MICROS})`,
  exit_url: `AggregateFunction(argMax, String, ${UTC_MICROS})`,
  screen_count: COUNT,
  autocapture_count: COUNT,
  ...Object.fromEntries(ENTRY_COLUMNS.map((name) => [name, `AggregateFunction(argMin, String, ${ENTRY_KEY_TYPE})`])),
  entry_country: `AggregateFunction(argMin, String, ${ENTRY_KEY_TYPE})`,
};

/**
 * The sessions view's query, over the table the events are inserted into on this node. Every column is a state
 * that a repeated event cannot change (sets of uuid hashes, first and last values), so a retried event counts once.
 * The engine plans this query again for every insert, and planning it costs more than running it on a flush's
 * events, most of it a share for each aggregate. So what the entry's columns share (whether the event is a view,
 * the argMin key, its parsed properties) is named once, in the subquery: a `WITH` alias is planned again at each
 * use, which took longer to plan. The properties are parsed for views only (`if` evaluates its branch for the
 * rows that take it): parsing is most of what running it costs.
 * The bounce rule is PostHog's, read rather than stored (docs/analytics.md#sessions).
 */
export const sessionsView = (events: string): string => `SELECT
      session_id,
      argMinState(distinct_id, timestamp) AS distinct_id,
      min(timestamp) AS min_timestamp,
      max(timestamp) AS max_timestamp,
      uniqState(uuid) AS event_count,
      uniqIfState(uuid, event = '$pageview') AS pageview_count,
      argMinIfState(current_url, timestamp, current_url != '') AS entry_url,
      argMaxIfState(current_url, timestamp, current_url != '') AS exit_url,
      uniqIfState(uuid, event = '$screen') AS screen_count,
      uniqIfState(uuid, event = '$autocapture') AS autocapture_count,
${ENTRY_COLUMNS.map((name, i) => `      argMinIfState(entry.${i + 1}, entry_key, entry.${i + 1} != '') AS ${name},\n`).join("")}      argMinIfState(if(is_view, ${COUNTRY}, ''), entry_key, is_view) AS entry_country
    FROM (
      SELECT *, ${IS_VIEW} AS is_view, ${ENTRY_KEY} AS entry_key, ${entryOf("is_view")} AS entry
      FROM ${events}
      WHERE session_id != ''
    )
    GROUP BY session_id`;

/**
 * Sums up again, into `sessions`, the sessions of the events of `events` that `where` selects, as the view did when
 * they were inserted. `ingest forget` deletes the rows of the sessions a person's events were in, then makes again
 * those that other persons' events share, from those events alone (write/forget.ts).
 */
export const sessionsFrom = (sessions: string, events: string, where: string): string =>
  `INSERT INTO ${sessions} (${Object.keys(SESSION_COLUMNS).join(", ")})
    ${sessionsView(`(SELECT * FROM ${events} WHERE ${where})`)}`;
