/**
 * The recording's events as templates of the `web` load: one event a kind, as the SDK sent it, and what
 * posthog-js made of each browser of bench/traffic/devices.ts. web.ts copies a template for each event and
 * rewrites only the values that belong to a person, a device, a session, a page or a moment.
 */
import { type Recording, readRecording } from "./recorded";

export type Event = Record<string, unknown> & { properties: Record<string, unknown> };

/** A kind of browser event, as an anonymous visitor's (personless) and as a logged-in user's. */
export interface Pair {
  readonly anonymous: Event;
  readonly identified: Event;
}

/** What an autocaptured click says of its element. */
export interface Click {
  readonly $elements_chain: string;
  readonly $el_text: string | undefined;
}

export interface Templates {
  readonly sdks: Recording["sdks"];
  readonly pageview: Pair;
  readonly autocapture: Pair;
  readonly pageleave: Pair;
  /** A custom `capture('…', {…})` from the page. */
  readonly custom: Pair;
  /** `identify(userId, {email, name})` as a visitor logs in. */
  readonly identify: Event;
  /** `setPersonProperties({…}, {…})`. */
  readonly set: Event;
  /** posthog-node's `capture`s and its `identify`. */
  readonly serverCaptures: readonly Event[];
  readonly serverIdentify: Event;
  /** Every element the recording clicked. */
  readonly clicks: readonly Click[];
  /** posthog-js's campaign parameters (`utm_source`, `gclid`, …), in its order. */
  readonly campaignParams: readonly string[];
  /** The keys posthog-js derives from a user agent (`$os`, `$browser`, …), as it derived them from each. */
  readonly userAgentKeys: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
}

/** The keys posthog-js reads off the user agent; a browser without one (`$device` on a desktop) leaves it out. */
export const USER_AGENT_KEYS = ["$os", "$os_version", "$browser", "$browser_version", "$device", "$device_type"];

/** `$set_once` keys of a first touch that are no campaign parameter. */
const TOUCH_KEYS = ["referrer", "referring_domain", "current_url", "host", "pathname", "search_engine"];

export function readTemplates(recording: Recording = readRecording()): Templates {
  const js = recording.requests.filter((r) => r.sdk === "posthog-js").flatMap((r) => r.events) as Event[];
  const node = recording.requests.filter((r) => r.sdk === "posthog-node").flatMap((r) => r.events) as Event[];
  const first = (from: readonly Event[], test: (event: Event) => boolean, what: string): Event => {
    const found = from.find(test);
    if (!found) throw new Error(`bench/traffic/recorded.json has no ${what}: record it again (bun bench/record.ts)`);
    return found;
  };
  const identified = (event: Event) => event.properties.$process_person_profile !== false;
  const pair = (test: (event: Event) => boolean, what: string): Pair => ({
    anonymous: first(js, (e) => test(e) && !identified(e), `anonymous ${what}`),
    identified: first(js, (e) => test(e) && identified(e) && e.event !== "$identify", `identified ${what}`),
  });
  const named = (name: string) => (event: Event) => event.event === name;
  const identify = first(js, named("$identify"), "$identify");
  const campaignParams = Object.keys(identify.$set_once as object)
    .filter((key) => key.startsWith("$initial_"))
    .map((key) => key.slice("$initial_".length))
    .filter((key) => !TOUCH_KEYS.includes(key));
  const userAgentKeys = new Map<string, Record<string, unknown>>();
  for (const event of js) {
    const agent = event.properties.$raw_user_agent as string;
    if (userAgentKeys.has(agent)) continue;
    userAgentKeys.set(agent, Object.fromEntries(USER_AGENT_KEYS.map((key) => [key, event.properties[key]])));
  }
  return {
    sdks: recording.sdks,
    pageview: pair(named("$pageview"), "$pageview"),
    autocapture: pair(named("$autocapture"), "$autocapture"),
    pageleave: pair(named("$pageleave"), "$pageleave"),
    custom: pair((e) => !String(e.event).startsWith("$"), "custom event"),
    identify,
    set: first(js, named("$set"), "$set"),
    serverCaptures: node.filter((e) => !String(e.event).startsWith("$")),
    serverIdentify: first(node, named("$identify"), "posthog-node $identify"),
    clicks: js.filter(named("$autocapture")).map((e) => ({
      $elements_chain: e.properties.$elements_chain as string,
      $el_text: e.properties.$el_text as string | undefined,
    })),
    campaignParams,
    userAgentKeys,
  };
}
