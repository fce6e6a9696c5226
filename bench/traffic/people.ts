/**
 * The people of the `web` load: each with one browser (a device, a time zone, a language: none changes from one
 * event to the next), the anonymous ID posthog-js gave that browser (a UUIDv7, also its `$device_id`), and, once
 * logged in, a user ID. Their sessions: an ID and a window ID, the page they are on, where they came from.
 */
import { DEVICES, type Device } from "./devices";
import { appPage, landing, marketingPage, type Page, type Rng, type Touch, weighted } from "./site";

/** posthog-js starts a new session after 30 minutes without an event, and after 24 hours of one session. */
const SESSION_IDLE_MS = 30 * 60_000;
const SESSION_MAX_MS = 24 * 3_600_000;

export interface Locale {
  readonly timezone: string;
  /** Minutes behind UTC, as `Date.getTimezoneOffset` says (November: no daylight saving time). */
  readonly offset: number;
  readonly language: string;
}

const LOCALES: readonly Locale[] = [
  { timezone: "America/New_York", offset: 300, language: "en-US" },
  { timezone: "America/Los_Angeles", offset: 480, language: "en-US" },
  { timezone: "Europe/London", offset: 0, language: "en-GB" },
  { timezone: "Europe/Berlin", offset: -60, language: "de-DE" },
  { timezone: "Europe/Paris", offset: -60, language: "fr-FR" },
  { timezone: "Asia/Kolkata", offset: -330, language: "en-IN" },
  { timezone: "America/Sao_Paulo", offset: 180, language: "pt-BR" },
];

export interface Session {
  readonly id: string;
  readonly windowId: string;
  readonly entry: Touch;
  readonly startedAt: number;
  lastAt: number;
  /** The page open now, once its `$pageview` was sent; the next one to open otherwise. */
  page: Page;
  /** Its `$pageview`'s ID and time; undefined until it is sent. */
  pageview: { readonly id: string; readonly at: number } | undefined;
}

export interface Person {
  /** posthog-js's anonymous distinct ID for the browser, and its `$device_id`. */
  readonly anonId: string;
  /** Set once the person logged in (their `$identify`); their distinct ID from then on. */
  userId: string | undefined;
  readonly device: Device;
  readonly locale: Locale;
  /** Their project in the app (app URLs), and their plan. */
  readonly project: number;
  plan: string;
  readonly email: string;
  readonly name: string;
  /** Where they first came from: posthog-js sends it as `$set_once` (`$initial_*`) with person events. */
  firstTouch: Touch | undefined;
  session: Session | undefined;
}

const FIRST = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia", "Tim"];
const LAST = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Perlman", "Lee"];
export const PLANS = ["free", "pro", "enterprise"];

/** A new person first seen at `at`: anonymous unless `userId` says they logged in before. */
export function newPerson(rng: Rng, at: number, userId?: string): Person {
  const n = rng.int(1e9);
  const name = `${rng.pick(FIRST)} ${rng.pick(LAST)}`;
  const person: Person = {
    anonId: Bun.randomUUIDv7("hex", at),
    userId,
    device: weighted(rng, DEVICES),
    locale: rng.pick(LOCALES),
    project: 1 + rng.int(5000),
    plan: rng.pick(PLANS),
    email: `${name.toLowerCase().replace(" ", ".")}.${n.toString(36)}@example.com`,
    name,
    firstTouch: undefined,
    session: undefined,
  };
  // someone who logged in before came from somewhere, some time ago
  if (userId) person.firstTouch = landing(rng, undefined);
  return person;
}

export const newUserId = (rng: Rng): string =>
  `user_${rng
    .int(2 ** 30)
    .toString(16)
    .padStart(8, "0")}`;

/** The person's session at `at`: the open one, or a new one after 30 idle minutes or 24 hours (or none yet). */
export function sessionAt(rng: Rng, person: Person, at: number): Session {
  const open = person.session;
  if (open && at - open.lastAt < SESSION_IDLE_MS && at - open.startedAt < SESSION_MAX_MS) {
    open.lastAt = at;
    return open;
  }
  const entry = landing(rng, person.userId ? person : undefined);
  person.firstTouch ??= entry;
  const session: Session = {
    id: Bun.randomUUIDv7("hex", at),
    windowId: Bun.randomUUIDv7("hex", at),
    entry,
    startedAt: at,
    lastAt: at,
    page: entry.page,
    pageview: undefined,
  };
  person.session = session;
  return session;
}

/** The page a person opens next: the app's for a user, mostly the site's for a visitor. */
export function nextPage(rng: Rng, person: Person): Page {
  return person.userId ? appPage(rng, person.project) : marketingPage(rng);
}
