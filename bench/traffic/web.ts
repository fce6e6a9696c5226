/**
 * The `web` load: what a product's site and backend send, made from the recorded events (templates.ts) for a
 * population of people (people.ts) browsing a site (site.ts), as a file of request bodies that wrk replays.
 *
 * The mix, of all events:
 * - 60% a logged-in user's page events ($pageview, $autocapture, $pageleave, custom `capture`s), with person
 *   profiles: $pageview carries the person's first touch as `$set_once`, as posthog-js sends it;
 * - 25% an anonymous visitor's page events, personless (`$process_person_profile: false`, posthog-js's default
 *   `person_profiles: 'identified_only'`), distinct ID the browser's anonymous UUIDv7;
 * - 2.5% `$identify`: an anonymous visitor logs in during a visit (`$anon_distinct_id` their anonymous ID, `$set`
 *   email and name) and is a user from then on, four in five with an account they have (a new browser), one in
 *   five signing up; a new visitor arrives in their place;
 * - 0.5% `$set` (`setPersonProperties`) from a user's page;
 * - 12% posthog-node: the backend's `capture`s (and a tenth of them `identify`) for a user, distinct ID the user ID.
 *
 * Page events come in visits, as a browser sends them: a person opens a few pages (`LAST_PAGE`), each a $pageview,
 * clicks and custom events on it, then its $pageleave, `VISIT_EVENT_GAP_MS` apart on average; posthog-js keeps one
 * `$session_id` (and `$window_id`) for them, and a new one after 30 idle minutes or 24 hours (people.ts). The
 * visits under way at once are as many as the step between events needs for that pace, so a load of events a few
 * seconds apart (the query bench's 30 days) has visits as long as one of 25 events a second.
 *
 * Batches of 100 events from many people, as `http` sends them. posthog-js itself posts a few events at a time
 * (the recording: 31 page events in 21 requests), so real traffic pays more HTTP per event than this load; a
 * flush of the service coalesces requests anyway, so identity and the inserts see the same flushes.
 *
 * Every event of the file is unique, and wrk makes every replay of it unique too (bench/wrk.lua, BENCH_UNIQUE=1):
 * it rewrites each event's `uuid`, `$insert_id`, `timestamp` and `$time`, and the body's `sent_at`, per request.
 */
import { writeFileSync } from "node:fs";
import { random } from "../../test/helpers/identity-model";
import { EVENTS_PER_BATCH, KEY, PEOPLE } from "../workload";
import { newPerson, newUserId, nextPage, type Person, PLANS, type Session, sessionAt } from "./people";
import { HOST, type Rng, type Touch, weighted } from "./site";
import { type Event, type Pair, readTemplates, type Templates, USER_AGENT_KEYS } from "./templates";

/** Shares of all events; the rest is logged-in users' page events. */
export const MIX = { server: 0.12, login: 0.025, set: 0.005, anonymous: 0.25 } as const;
const KINDS = [
  ...Object.entries(MIX).map(([kind, share]) => ({ kind, share })),
  { kind: "user", share: 1 - Object.values(MIX).reduce((sum, share) => sum + share, 0) },
];
/** Of the people at the start, the share who logged in before. */
const USERS = 0.7;
/**
 * Of logins, the share by users who have an account: posthog-js keeps a user's ID in the browser, so a user
 * `$identify`s again only on a new browser or after a logout; the rest sign up.
 */
const RETURNING = 0.8;
/** The site's events come this far apart (25 a second): a file of 40,000 events spans 27 minutes. */
const STEP_MS = 40;
/** A visit's events come this far apart on average: a page is read for a minute and a half (4.3 events). */
const VISIT_EVENT_GAP_MS = 20_000;
/** The chance that a page is the visit's last: a visitor reads 2.5 pages on average, a user works on 4. */
const LAST_PAGE = { user: 0.25, anonymous: 0.4 } as const;
type Audience = keyof typeof LAST_PAGE;
/** Shares of all events by the visits they come from: a user's pages and `$set`s, a visitor's pages and logins. */
const VISIT_SHARES: Readonly<Record<Audience, number>> = {
  user: 1 - MIX.server - MIX.login - MIX.anonymous,
  anonymous: MIX.anonymous + MIX.login,
};

/** A person's visit under way: the pages they will open yet, the one open now included. */
interface Visit {
  readonly person: Person;
  pagesLeft: number;
}

type Properties = Record<string, unknown>;

/** Sets each key to its value, or deletes it for undefined: a key the template has keeps its place. */
function assign(target: Properties, values: Properties): void {
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined) delete target[key];
    else target[key] = value;
  }
}

/** Sets only the keys the template has (those its kind of event carries). */
function assignExisting(target: Properties, values: Properties): void {
  for (const [key, value] of Object.entries(values)) if (Object.hasOwn(target, key)) target[key] = value;
}

const iso = (at: number) => new Date(at).toISOString();
const insertId = (rng: Rng) => Array.from({ length: 16 }, () => rng.int(36).toString(36)).join("");

/** The load's events, one after another, from its people. */
export class WebTraffic {
  readonly #rng: Rng = random(20261126);
  readonly #t: Templates;
  readonly #users: Person[] = [];
  readonly #visitors: Person[] = [];
  /** The visits under way, a user's and a visitor's, and how many of each are under way at once. */
  readonly #visits: Record<Audience, Visit[]> = { user: [], anonymous: [] };
  readonly #visitsAtOnce: Record<Audience, number>;
  readonly #visiting = new Set<Person>();
  #at: number;
  readonly #stepMs: number;

  /** `stepMs` apart, the events of `people` from `start` on. */
  constructor(start: number, people = PEOPLE, templates = readTemplates(), stepMs = STEP_MS) {
    this.#stepMs = stepMs;
    this.#t = templates;
    this.#at = start;
    for (let i = 0; i < people; i++) {
      const user = this.#rng.next() < USERS;
      const person = newPerson(
        this.#rng,
        start - this.#rng.int(90 * 86_400_000),
        user ? newUserId(this.#rng) : undefined,
      );
      (user ? this.#users : this.#visitors).push(person);
    }
    // a visit gets one in `atOnce` of its audience's events, so they come atOnce / share steps apart; at most a
    // tenth of the audience visits at once, so that a new visit soon finds someone who is not visiting
    const atOnce = (audience: Audience, people: number) =>
      Math.max(
        1,
        Math.min(Math.round((VISIT_EVENT_GAP_MS * VISIT_SHARES[audience]) / stepMs), Math.floor(people / 10)),
      );
    this.#visitsAtOnce = {
      user: atOnce("user", this.#users.length),
      anonymous: atOnce("anonymous", this.#visitors.length),
    };
  }

  /** The next event, a step after the last. */
  next(): Event {
    this.#at += this.#stepMs;
    const rng = this.#rng;
    const kind = weighted(rng, KINDS).kind;
    if (kind === "server") return this.#server(rng.pick(this.#users));
    if (kind === "login") return this.#login(this.#onPage(this.#visit("anonymous")));
    if (kind === "set") return this.#set(this.#visit("user").person);
    return this.#pageEvent(this.#visit(kind === "anonymous" ? "anonymous" : "user"));
  }

  /** One of the visits under way of the audience, after new ones have started where some ended. */
  #visit(audience: Audience): Visit {
    const visits = this.#visits[audience];
    while (visits.length < this.#visitsAtOnce[audience]) {
      const people = audience === "user" ? this.#users : this.#visitors;
      let person = this.#rng.pick(people);
      while (this.#visiting.has(person)) person = this.#rng.pick(people);
      this.#visiting.add(person);
      visits.push({ person, pagesLeft: this.#pages(audience) });
    }
    return this.#rng.pick(visits);
  }

  /** A visit of the same audience as `visit` whose page is open (its $pageview sent), if one is; else `visit`. */
  #onPage(visit: Visit): Visit {
    if (visit.person.session?.pageview) return visit;
    const audience = visit.person.userId === undefined ? "anonymous" : "user";
    return this.#visits[audience].find((other) => other.person.session?.pageview) ?? visit;
  }

  /** How many pages a visit opens: one, then another until one is the last. */
  #pages(audience: Audience): number {
    let pages = 1;
    while (this.#rng.next() >= LAST_PAGE[audience]) pages++;
    return pages;
  }

  /** Takes the visit out of those of `audience` under way (its order does not matter: visits are picked at random). */
  #remove(audience: Audience, visit: Visit): void {
    const visits = this.#visits[audience];
    const at = visits.indexOf(visit);
    visits[at] = visits.at(-1)!;
    visits.pop();
  }

  /**
   * A page event of the visit: the open page's $pageview, a click or custom event on it, or leaving it; the visit
   * ends as its last page is left.
   */
  #pageEvent(visit: Visit): Event {
    const { person } = visit;
    const session = sessionAt(this.#rng, person, this.#at);
    const roll = this.#rng.next();
    if (!session.pageview) {
      session.pageview = { id: Bun.randomUUIDv7("hex", this.#at), at: this.#at };
      const event = this.#browser(this.#t.pageview, person, session);
      event.uuid = session.pageview.id; // posthog-js's $pageview_id is its $pageview's uuid
      return event;
    }
    if (roll < 0.6) {
      const event = this.#browser(this.#t.autocapture, person, session);
      assign(event.properties, { ...this.#rng.pick(this.#t.clicks) });
      return event;
    }
    if (roll < 0.7) {
      const event = this.#browser(this.#t.custom, person, session);
      varyCustom(this.#rng, event.properties);
      return event;
    }
    const event = this.#browser(this.#t.pageleave, person, session);
    session.page = nextPage(this.#rng, person);
    session.pageview = undefined;
    if (--visit.pagesLeft === 0) {
      this.#remove(person.userId === undefined ? "anonymous" : "user", visit);
      this.#visiting.delete(person);
    }
    return event;
  }

  /**
   * The visitor logs in on the page they are on (`$identify`), as a user who has an account (`RETURNING`: a new
   * browser, cleared cookies) or signing up, and goes on as a user, in the same session; a new visitor takes their
   * place among the people.
   */
  #login(visit: Visit): Event {
    const { person } = visit;
    const session = sessionAt(this.#rng, person, this.#at);
    const account = this.#rng.next() < RETURNING ? this.#rng.pick(this.#users) : person;
    person.userId = account.userId ?? newUserId(this.#rng);
    this.#visitors[this.#visitors.indexOf(person)] = newPerson(this.#rng, this.#at);
    this.#users.push(person);
    this.#remove("anonymous", visit);
    this.#visits.user.push(visit);
    const event = this.#browser({ anonymous: this.#t.identify, identified: this.#t.identify }, person, session);
    assign(event, { $set: { email: account.email, name: account.name } });
    event.properties.$anon_distinct_id = person.anonId;
    return event;
  }

  /** `setPersonProperties({plan, role}, {signup_plan})` from a user's page. */
  #set(person: Person): Event {
    const session = sessionAt(this.#rng, person, this.#at);
    const event = this.#browser({ anonymous: this.#t.set, identified: this.#t.set }, person, session);
    const signedUpOn = person.plan;
    person.plan = this.#rng.pick(PLANS);
    event.properties.$set = { plan: person.plan, role: this.#rng.pick(["admin", "member", "viewer"]) };
    event.properties.$set_once = { signup_plan: signedUpOn };
    return event;
  }

  /** posthog-node, from the backend, about a user: a `capture` with properties, or an `identify`. */
  #server(person: Person): Event {
    const identify = this.#rng.next() < 0.1;
    const event = structuredClone(identify ? this.#t.serverIdentify : this.#rng.pick(this.#t.serverCaptures));
    assign(event, { uuid: Bun.randomUUIDv7("hex", this.#at), timestamp: iso(this.#at), distinct_id: person.userId });
    if (identify) {
      event.properties.$set = { plan: person.plan, stripe_customer: `cus_${person.anonId.slice(-12)}` };
    } else {
      varyCustom(this.#rng, event.properties);
      assignExisting(event.properties, { plan: person.plan });
    }
    return event;
  }

  /** A copy of the template for the person (anonymous or logged in), rewritten for their browser, session and page. */
  #browser(pair: Pair, person: Person, session: Session): Event {
    const identified = person.userId !== undefined;
    const event = structuredClone(identified ? pair.identified : pair.anonymous);
    const p = event.properties;
    const at = this.#at;
    const { device, locale } = person;
    assign(event, { uuid: Bun.randomUUIDv7("hex", at), timestamp: iso(at) });
    assign(p, {
      distinct_id: person.userId ?? person.anonId,
      $device_id: person.anonId,
      $user_id: person.userId,
      $is_identified: identified,
      $process_person_profile: identified,
      ...Object.fromEntries(USER_AGENT_KEYS.map((key) => [key, this.#t.userAgentKeys.get(device.userAgent)?.[key]])),
      $raw_user_agent: device.userAgent,
      $screen_width: device.screen[0],
      $screen_height: device.screen[1],
      $viewport_width: device.viewport[0],
      $viewport_height: device.viewport[1],
      $timezone: locale.timezone,
      $timezone_offset: locale.offset,
      $browser_language: locale.language,
      $browser_language_prefix: locale.language.slice(0, 2),
      $current_url: session.page.url,
      $host: HOST,
      $pathname: session.page.pathname,
      $insert_id: insertId(this.#rng),
      $time: at / 1000,
      token: KEY,
      ...this.#sessionProperties(session),
    });
    const pageview = session.pageview ?? { id: Bun.randomUUIDv7("hex", at), at };
    assignExisting(p, {
      title: session.page.title,
      $pageview_id: pageview.id,
      $initialization_time: iso(pageview.at),
      $prev_pageview_id: pageview.id,
      $prev_pageview_pathname: session.page.pathname,
      $prev_pageview_duration: (at - pageview.at) / 1000,
    });
    if (Object.hasOwn(event, "$set_once") && person.firstTouch) event.$set_once = this.#firstTouch(person.firstTouch);
    return event;
  }

  /** What posthog-js keeps for a session: its IDs, its referrer, and its landing page and campaign. */
  #sessionProperties({ id, windowId, entry }: Session): Properties {
    const campaign = (param: string) => (entry.campaign ? (entry.campaign[param] ?? null) : undefined);
    return {
      $session_id: id,
      $window_id: windowId,
      $referrer: entry.referrer,
      $referring_domain: entry.referringDomain,
      $search_engine: entry.searchEngine,
      ...Object.fromEntries(this.#t.campaignParams.map((param) => [param, campaign(param)])),
      $session_entry_url: entry.page.url,
      $session_entry_host: HOST,
      $session_entry_pathname: entry.page.pathname,
      $session_entry_referrer: entry.referrer,
      $session_entry_referring_domain: entry.referringDomain,
      $session_entry_search_engine: entry.searchEngine,
      ...Object.fromEntries(
        this.#t.campaignParams.map((param) => [`$session_entry_${param}`, entry.campaign?.[param]]),
      ),
    };
  }

  /** posthog-js's `$set_once` of a person event: where they first came from, as `$initial_*` and as is. */
  #firstTouch(touch: Touch): Properties {
    const touchKeys = (prefix: string): Properties => ({
      [`${prefix}referrer`]: touch.referrer,
      [`${prefix}referring_domain`]: touch.referringDomain,
      [`${prefix}current_url`]: touch.page.url,
      [`${prefix}host`]: HOST,
      [`${prefix}pathname`]: touch.page.pathname,
    });
    const campaign = (prefix: string) =>
      Object.fromEntries(this.#t.campaignParams.map((param) => [`${prefix}${param}`, touch.campaign?.[param] ?? null]));
    const engine = (key: string) => (touch.searchEngine ? { [key]: touch.searchEngine } : {});
    return {
      ...touchKeys("$initial_"),
      ...campaign("$initial_"),
      ...engine("$initial_search_engine"),
      ...touchKeys("$"),
      ...campaign(""),
      ...engine("$search_engine"),
    };
  }
}

/** A custom event's own properties, varied: numbers drawn anew around the recorded value, strings kept. */
function varyCustom(rng: Rng, properties: Properties): void {
  for (const [key, value] of Object.entries(properties)) {
    if (!key.startsWith("$") && typeof value === "number") properties[key] = 1 + rng.int(Math.max(2, value * 2));
  }
}

/** Writes `count` request bodies of the `web` load, one a line, ending now; returns the mean bytes per event. */
export function writeWebBodies(path: string, count: number): number {
  const start = Date.now() - count * EVENTS_PER_BATCH * STEP_MS;
  const traffic = new WebTraffic(start);
  const lines: string[] = [];
  for (let b = 0; b < count; b++) {
    const batch = Array.from({ length: EVENTS_PER_BATCH }, () => traffic.next());
    const sentAt = iso(Date.parse(batch.at(-1)!.timestamp as string) + 50);
    lines.push(JSON.stringify({ api_key: KEY, batch, sent_at: sentAt }));
  }
  writeFileSync(path, `${lines.join("\n")}\n`);
  return lines.reduce((sum, line) => sum + line.length, 0) / (count * EVENTS_PER_BATCH);
}
