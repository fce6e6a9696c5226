import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { CapturedEvent, Timestamp } from "../../src/contract/event";
import type { Component } from "../../src/identity/component";
import { components } from "../../src/identity/components";
import { type FactRow, onceKey } from "../../src/identity/facts";
import { factsOf } from "../../src/identity/flush-facts";
import type { HeldOf } from "../../src/identity/held";
import { personIdFor } from "../../src/identity/person";
import { personIntentOf } from "../../src/identity/person-rules";
import { personOf } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";
const at = (second: number) => `2026-01-01 00:00:${String(second).padStart(2, "0")}.000000` as Timestamp;

/** What an event at `second` past the minute asks of its person, automatic properties on. */
const intent = (distinctId: string, second: number, properties: Record<string, unknown>, event = "e") =>
  personIntentOf({ event, distinctId, properties, timestamp: at(second) } as unknown as CapturedEvent, {
    automaticProperties: true,
  });

let arrival = 0;
/**
 * The facts a flush of these intents writes, holding `held` of their persons (nothing by default): an ID whose
 * person it holds is linked, any other is new.
 */
const flush = (intents: ReturnType<typeof intent>[], held: HeldOf = () => undefined): FactRow[] =>
  factsOf(
    intents,
    (id) => (typeof held(id) === "object" ? { personId: personIdFor(id), version: 2 ** 52 + 2 ** 50 } : undefined),
    () => ++arrival,
    held,
  );

/** A person as a sole writer caches it: the facts of these intents, folded. */
function person(...intents: ReturnType<typeof intent>[]): Component {
  return components(flush(intents))[0]!;
}

/** Each fact as `kind:name`, a `once` fact by its key. */
const names = (facts: readonly FactRow[]) =>
  facts.map((fact) => `${fact.kind}:${fact.kind === "once" ? onceKey(fact.name) : fact.name}`).sort();

/** posthog-js's page and device keys, and the campaign keys it sends as null when the URL has none. */
const page = (url: string, extra: Record<string, unknown> = {}) => ({
  $current_url: url,
  $pathname: new URL(url).pathname,
  $browser: "Chrome",
  $browser_version: 142,
  $os: "Mac OS X",
  $device_type: "Desktop",
  $screen_width: 1512,
  utm_source: null,
  utm_campaign: null,
  gclid: null,
  ...extra,
});

describe("what a flush does not write", () => {
  test("a fact the person holds already is not written: an earlier $set, a later $identify", () => {
    const held = person(intent("u", 5, { $set: { k: "late" } }), intent("u", 1, {}, "$identify"));
    const facts = flush([intent("u", 3, { $set: { k: "early" } }, "$identify")], () => held);
    expect(facts).toEqual([]);
    // a later $set is written, whatever its value: a late event between the two must still lose to it
    expect(names(flush([intent("u", 9, { $set: { k: "late" } })], () => held))).toEqual(["property:k"]);
  });

  test("two updates of one key in one flush are one row, folded as the table folds them", () => {
    const facts = flush([intent("u", 1, { $set: { k: 1 } }), intent("u", 2, { $set: { k: 2 } })]);
    const property = facts.filter((fact) => fact.kind === "property");
    expect(property).toHaveLength(1);
    expect(property[0]).toMatchObject({ writes: 2, at: [at(1), expect.any(Number)] });
    expect(property[0]!.last_write[4]).toBe("2");
  });

  test("automatic properties the person holds are not written: the same page keys, campaign nulls, first touch", () => {
    const held = person(intent("u", 1, page("https://app/a")));
    expect(flush([intent("u", 2, page("https://app/a"))], () => held)).toEqual([]);
    // a new page alone changes nothing the person needs written (page keys never write alone)
    expect(flush([intent("u", 3, page("https://app/b"))], () => held)).toEqual([]);
  });

  test("a changed campaign writes that key, the page keys that moved along, and no first touch it holds", () => {
    const held = person(intent("u", 1, page("https://app/a")));
    const facts = flush([intent("u", 4, page("https://app/b?utm_source=mail", { utm_source: "mail" }))], () => held);
    expect(names(facts)).toEqual([
      "once:$initial_utm_source",
      "property:$current_url",
      "property:$initial_utm_source",
      "property:$pathname",
      "property:utm_source",
    ]);
  });

  test("a first touch the person lacks is a change (as in PostHog), written once", () => {
    const held = person(intent("u", 1, { $browser: "Chrome" }));
    const first = flush([intent("u", 2, { $browser: "Chrome", $referrer: "https://search/" })], () => held);
    expect(names(first)).toContain("property:$initial_referrer");
    held.absorb(components(first)[0]!);
    expect(flush([intent("u", 3, { $browser: "Chrome", $referrer: "https://other/" })], () => held)).toEqual([]);
  });

  test("a $set_once of a key the person has from an earlier one is not written; after an $unset it is", () => {
    const held = person(intent("u", 1, { $set_once: { plan: "free" } }));
    expect(flush([intent("u", 2, { $set_once: { plan: "pro" } })], () => held)).toEqual([]);
    held.absorb(components(flush([intent("u", 3, { $unset: ["plan"] })], () => held))[0]!);
    expect(names(flush([intent("u", 4, { $set_once: { plan: "pro" } })], () => held))).toEqual([
      "once:plan",
      "property:plan",
    ]);
  });

  test("repeats within one flush of a person held are written once", () => {
    const facts = flush(
      [
        intent("new", 1, page("https://app/a")),
        intent("new", 2, page("https://app/a")),
        intent("new", 3, page("https://app/b")),
      ],
      () => "none",
    );
    const writes = facts.filter((fact) => fact.kind === "property").map((fact) => fact.writes);
    expect(writes.every((n) => n === 1)).toBe(true);
  });

  test("with nothing held (another writer may have written facts), every update is written as before", () => {
    const facts = flush([intent("u", 1, page("https://app/a")), intent("u", 2, page("https://app/a"))]);
    expect(facts.filter((fact) => fact.kind === "property").every((fact) => fact.writes === 2)).toBe(true);
  });

  test("an earlier event that arrives late still wins a first touch, its own $set_once too", () => {
    const held = person(intent("u", 5, { $browser: "Chrome", $set_once: { signup: "b" } }));
    const late = flush(
      [intent("u", 1, { $browser: "Firefox", utm_source: "ads", $set_once: { signup: "a" } })],
      () => held,
    );
    expect(names(late)).toEqual(
      expect.arrayContaining(["property:$initial_browser", "property:$initial_utm_source", "property:signup"]),
    );
    expect(late.filter((fact) => fact.kind === "once")).toHaveLength(3);
    // the later Chrome stays the $browser: the late Firefox is older than the write it would replace
    expect(names(late)).not.toContain("property:$browser");
  });
});

describe("what a flush still writes (found by review)", () => {
  test("a $set_once between the person's earliest and latest, after an $unset: its property fact goes in too", () => {
    const held = person(
      intent("u", 1, { $set_once: { plan: "a" } }),
      intent("u", 3, { $unset: ["plan"] }),
      intent("u", 10, { $set_once: { plan: "c" } }),
    );
    // alone, its once fact would count in no version and no cached fold, though it makes the value b
    expect(names(flush([intent("u", 5, { $set_once: { plan: "b" } })], () => held))).toEqual([
      "once:plan",
      "property:plan",
    ]);
  });

  test("after a merge in the flush, another ID of the person merged in sees the merged person", () => {
    const a = person(
      intent("a", 1, { $set_once: { plan: "free" }, $browser: "Firefox" }),
      intent("a", 2, { alias: "a2" }, "$create_alias"),
    );
    const u = person(intent("u", 3, { $unset: ["plan"], $browser: "Chrome", $set: { y: 1 } }));
    const facts = flush(
      [
        intent("u", 4, { $anon_distinct_id: "a" }, "$identify"),
        intent("a2", 5, { $set_once: { plan: "pro" }, $browser: "Firefox" }),
      ],
      (id) => (id === "u" ? u : a),
    );
    // merged: plan's latest write is the $unset (so the $set_once counts), $browser Chrome (so Firefox is a change)
    expect(names(facts)).toEqual(expect.arrayContaining(["property:plan", "property:$browser"]));
  });

  test("a location the latest location repeats is still written when a key's own $set came after it", () => {
    const held = person(
      intent("g", 1, { $geoip_city_name: "Paris", $set: { x: 1 } }),
      intent("g", 2, { $set: { $geoip_city_name: "Berlin" } }),
    );
    expect(names(flush([intent("g", 3, { $geoip_city_name: "Paris", $set: { y: 1 } })], () => held))).toContain(
      "location:",
    );
  });
});

describe("a sole writer, on posthog-js-shaped traffic", () => {
  let service: TestService;
  beforeAll(async () => {
    // a sole writer in server mode too (there the service is one of several by default)
    service = await startService({ PUBLIC_API_KEYS: KEY }, { identity: { soleWriter: true } });
  });
  afterAll(() => service.stop());

  const capture = async (batch: object[]) => expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
  /** The updates the facts of a distinct ID hold, and the person's rows: neither shrinks as merges collapse rows. */
  const written = async (id: string) => {
    const [row] = await service.db.rows<{ updates: string }>(
      `SELECT sum(writes) AS updates FROM ${service.db.table("identity_facts")} WHERE distinct_id = '${id}'`,
    );
    const [persons] = await service.db.rows<{ n: string }>(
      `SELECT count() AS n FROM ${service.db.table("persons")} WHERE distinct_id = '${id}'`,
    );
    return { facts: Number(row!.updates), persons: Number(persons!.n) };
  };
  const pageview = (id: string, n: number, extra: Record<string, unknown> = {}) => ({
    event: "$pageview",
    distinct_id: id,
    timestamp: new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString(),
    properties: { ...page(`https://app/p${n % 7}`), $session_id: "s1", $lib: "web", ...extra },
  });

  test("1,000 events from one person with the same automatic properties: its facts and person rows do not grow", async () => {
    await capture([pageview("steady", 0, { $set: { email: "a@b.c" } })]);
    const first = await written("steady");
    for (let batch = 0; batch < 10; batch++) {
      await capture(Array.from({ length: 100 }, (_, i) => pageview("steady", 1 + batch * 100 + i)));
    }
    expect(await written("steady")).toEqual(first);
    // a later change is still written, and the person follows the rules
    await capture([pageview("steady", 2000, { utm_source: "mail" })]);
    expect((await written("steady")).facts).toBeGreaterThan(first.facts);
    expect((await personOf(service.db, "steady"))?.properties).toMatchObject({
      email: "a@b.c",
      utm_source: "mail",
      $initial_utm_source: "mail",
      $current_url: "https://app/p5",
      $initial_current_url: "https://app/p0",
    });
  });
});
