import { type } from "arktype";
import { flag, positive } from "./parse";
import { setting, type Topic } from "./setting";

/**
 * Identity: which events make persons and which properties they set on them, what is cached of links and persons,
 * and how often facts no person reflects yet are repaired (src/identity, docs/identity.md).
 */
export const IDENTITY = {
  linkCacheEntries: setting({
    env: "LINK_CACHE_ENTRIES",
    parse: positive,
    default: 200_000,
    help: "Distinct ID → person links held in memory (about 230 bytes each); embedded, size it above your distinct IDs.",
    backend: "any",
  }),
  linkCacheTtlMs: setting({
    env: "LINK_CACHE_TTL_MS",
    parse: positive,
    default: 5_000,
    help: "With other instances writing: how long a cached link may serve events that change no person.",
    backend: "server",
  }),
  personlessEvents: setting({
    env: "PERSONLESS_EVENTS",
    parse: flag,
    default: true,
    shownDefault: "`1`",
    help: "`1`: an event with `$process_person_profile: false`, or a `$$heatmap`, makes and changes no person, and an `$exception` changes only a person it makes, as PostHog does (a personless event keeps its ID's person, or the one a first profile would make). `0`: every event is a profile event.",
    backend: "any",
  }),
  personAutoProperties: setting({
    env: "PERSON_AUTO_PROPERTIES",
    parse: flag,
    default: true,
    shownDefault: "`1`",
    help: "`1`: set `$browser`, `$os`, `$current_url`, `utm_*` and the like from events on their person, and `$initial_*` once, as PostHog does. `0`: only what SDKs `$set`.",
    backend: "any",
  }),
  personCreatorEvent: setting({
    env: "PERSON_CREATOR_EVENT",
    parse: flag,
    default: false,
    shownDefault: "`0`",
    help: "`1`: a new person's properties hold `$creator_event_uuid`, the uuid of the event that created it, as PostHog does (the survivor's, after a merge). `0`: none, only what events set.",
    backend: "any",
  }),
  repairIntervalS: setting({
    env: "REPAIR_INTERVAL_S",
    parse: type("string.integer.parse").to("0 <= number.integer <= 3600"),
    default: 60,
    help: "How often identity facts no person reflects yet (a write that failed half-way, never retried) are derived (0: only at startup).",
    backend: "any",
  }),
  squashIntervalS: setting({
    env: "SQUASH_INTERVAL_S",
    parse: type("string.integer.parse").to("0 <= number.integer <= 604800"),
    default: 3600,
    help: "How often the events of persons merged away are rewritten to the persons they went to, so that `events_resolved` reads no merge older than `SQUASH_GRACE_S` (0: never).",
    backend: "any",
  }),
  squashGraceS: setting({
    env: "SQUASH_GRACE_S",
    parse: type("string.integer.parse").to("0 <= number.integer <= 604800"),
    default: 3600,
    help: "How old a merge is before a squash applies it: longer than any event can take from its flush's identity reads to its insert, on any instance.",
    backend: "any",
  }),
  personCacheMiB: setting({
    env: "PERSON_CACHE_MIB",
    parse: positive,
    default: 512,
    help: "Memory for cached persons (their identity facts, folded), estimated from their IDs and properties (a posthog-js user's about 30 KB).",
    backend: "embedded",
  }),
} as const satisfies Topic;
