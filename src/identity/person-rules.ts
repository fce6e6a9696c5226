import type { CapturedEvent, Properties, TopLevelSets } from "../contract";
import { distinctIdFrom, isObject } from "../contract";
import { type AutomaticUpdates, automaticUpdatesOf, type PersonLocation, personLocationOf } from "./automatic";

/**
 * Values SDKs send when they have no real ID. Linking on one would merge unrelated people, so an `$identify` or
 * `$create_alias` naming one links nothing (the event itself is still stored). Compared trimmed and lower-cased,
 * bare or inside one pair of double or single quotes: a client that JSON-encodes an ID twice sends `"undefined"`
 * with its quotes, and PostHog refuses those too.
 */
const PLACEHOLDER_IDS = new Set([
  "",
  "anonymous",
  "guest",
  "distinctid",
  "distinct_id",
  "id",
  "not_authenticated",
  "email",
  "undefined",
  "null",
  "none",
  "nan",
  "true",
  "false",
  "0",
  "[object object]",
]);

export function isLinkable(distinctId: string): boolean {
  const id = distinctId.trim().toLowerCase();
  return !PLACEHOLDER_IDS.has(id) && !PLACEHOLDER_IDS.has(unquoted(id));
}

/** The text inside one pair of double or single quotes around it, or itself. */
function unquoted(id: string): string {
  const quote = id[0];
  return id.length >= 2 && (quote === '"' || quote === "'") && id.at(-1) === quote ? id.slice(1, -1) : id;
}

/**
 * The ID an event asks to put on its own person: `$anon_distinct_id` of an `$identify`, `alias` of a
 * `$create_alias` or a `$merge_dangerously` (PostHog's `$create_alias` that may merge two identified persons; no
 * link here is ever refused, so the two are one). Undefined when there is none, it equals the event's distinct ID,
 * or either is a placeholder.
 */
export function linkedIdOf(event: CapturedEvent): string | undefined {
  const carrier =
    event.event === "$identify"
      ? event.properties.$anon_distinct_id
      : event.event === "$create_alias" || event.event === "$merge_dangerously"
        ? event.properties.alias
        : undefined;
  const other = distinctIdFrom(carrier);
  if (other === undefined || other === event.distinctId) return undefined;
  return isLinkable(other) && isLinkable(event.distinctId) ? other : undefined;
}

/** What one event asks of the person model. */
export interface PersonIntent {
  readonly event: CapturedEvent;
  /** The ID to put on the event's person (see linkedIdOf). */
  readonly linkedId: string | undefined;
  readonly updates: PersonUpdates | undefined;
  readonly identifies: boolean;
  /** The event's `personless`: no person is made or changed by it. */
  readonly personless: boolean;
  /** The event's `updatesNewPersonOnly`: `updates`, `automatic` and `location` count only if it creates its person. */
  readonly updatesNewPersonOnly: boolean;
  /** What its properties say of its person PostHog's way (`PERSON_AUTO_PROPERTIES`), applied as `factsOf` says. */
  readonly automatic: AutomaticUpdates | undefined;
  /** Where it came from (its own `$geoip_*`, and GeoIP's), for its person, applied with `automatic`. */
  readonly location: PersonLocation | undefined;
  /** The event's uuid, which a person it creates holds as `$creator_event_uuid` (`PERSON_CREATOR_EVENT`). */
  readonly creator: string | undefined;
}

/** Which of PostHog's additions to what events say of persons apply. */
export interface PersonRules {
  /** `PERSON_AUTO_PROPERTIES`: PostHog's automatic person properties (`automatic.ts`). */
  readonly automaticProperties?: boolean | undefined;
  /** `PERSON_CREATOR_EVENT`: a new person's `$creator_event_uuid`, the uuid of the event that created it. */
  readonly creatorEvent?: boolean | undefined;
}

/** The distinct IDs intents name, their events' own and the ones they link; `profiles`: of events that are not personless. */
export function namedIds(intents: readonly PersonIntent[], { profiles = false } = {}): Set<string> {
  const ids = new Set<string>();
  for (const { event, linkedId, personless } of intents) {
    if (profiles && personless) continue;
    ids.add(event.distinctId);
    if (linkedId !== undefined) ids.add(linkedId);
  }
  return ids;
}

/** What an event asks of its person, with what `rules` add. */
export function personIntentOf(event: CapturedEvent, rules: PersonRules = {}): PersonIntent {
  const personless = event.personless === true;
  const automatic = rules.automaticProperties === true;
  return {
    event,
    linkedId: linkedIdOf(event),
    updates: personless ? undefined : personUpdatesOf(event.properties, event.topLevelSets),
    identifies: event.event === "$identify",
    personless,
    updatesNewPersonOnly: event.updatesNewPersonOnly === true,
    automatic: automatic && !personless ? automaticUpdatesOf(event.properties) : undefined,
    location: automatic && !personless ? personLocationOf(event.properties, event.location?.properties) : undefined,
    creator: rules.creatorEvent === true ? event.uuid : undefined,
  };
}

export interface PersonUpdates {
  readonly set: Properties | undefined;
  readonly setOnce: Properties | undefined;
  readonly unset: readonly string[] | undefined;
}

/**
 * `$set`, `$set_once` and `$unset` (a list of keys, or an object whose keys are removed) from event properties,
 * with event-level `$set` / `$set_once` merged over them.
 */
export function personUpdatesOf(properties: Properties, topLevelSets: TopLevelSets = {}): PersonUpdates | undefined {
  const unset = properties.$unset;
  const updates: PersonUpdates = {
    set: merged(properties.$set, topLevelSets.$set),
    setOnce: merged(properties.$set_once, topLevelSets.$set_once),
    unset: Array.isArray(unset)
      ? unset.filter((key): key is string => typeof key === "string")
      : isObject(unset)
        ? Object.keys(unset)
        : undefined,
  };
  return (updates.set ?? updates.setOnce ?? updates.unset) ? updates : undefined;
}

/** The object inside `properties` with the event-level one over it (the event level wins a conflict). */
function merged(inProperties: unknown, topLevel: Properties | undefined): Properties | undefined {
  const inside = isObject(inProperties) ? inProperties : undefined;
  if (topLevel === undefined) return inside;
  return inside === undefined ? topLevel : { ...inside, ...topLevel };
}
