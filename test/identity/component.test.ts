import { describe, expect, test } from "bun:test";
import type { CapturedEvent, Timestamp } from "../../src/contract/event";
import { components } from "../../src/identity/components";
import { compareTuples, type FactRow } from "../../src/identity/facts";
import { coalesced, factsOf } from "../../src/identity/flush-facts";
import { personIntentOf } from "../../src/identity/person-rules";
import { settled } from "../helpers/onces";

const at = (second: number) => `2026-01-01 00:00:0${second}.000000` as Timestamp;

/** What an event at `second` past the minute asks of its person. */
const intent = (distinctId: string, second: number, properties: Record<string, unknown>, name = "e") =>
  personIntentOf({ event: name, distinctId, properties, timestamp: at(second) } as unknown as CapturedEvent);

/** The facts of these intents, stamped in order as one process would. */
function factsOfIntents(intents: ReturnType<typeof intent>[]) {
  let arrival = 0;
  return factsOf(
    intents,
    () => undefined,
    () => ++arrival,
  );
}

/** Events of one distinct ID, a second apart in the order given, folded into the person their facts make. */
function personAfter(...updates: Record<string, unknown>[]) {
  const facts = factsOfIntents(updates.map((properties, i) => intent("p", i, properties)));
  const [component] = settled(components(facts), facts);
  return component!.person()!;
}

const propertiesAfter = (...updates: Record<string, unknown>[]) => JSON.parse(personAfter(...updates).properties);

describe("person properties, folded from facts", () => {
  test("$set overwrites, $set_once fills only absent keys, $unset removes", () => {
    expect(propertiesAfter({ $set: { a: 1, b: 2 } }, { $set: { a: 10, c: 3 } })).toEqual({ a: 10, b: 2, c: 3 });
    expect(propertiesAfter({ $set: { a: 1 } }, { $set_once: { a: 10, b: 2 } })).toEqual({ a: 1, b: 2 });
    expect(propertiesAfter({ $set: { a: 1, b: 2, c: 3 } }, { $unset: ["a", "c", "missing"] })).toEqual({ b: 2 });
    expect(propertiesAfter({ $set: { a: 1, b: 2 } }, { $unset: { a: null } })).toEqual({ b: 2 });
  });

  test("a key set to null is kept, with the value null", () => {
    expect(propertiesAfter({ $set: { a: 1 } }, { $set_once: { a: 2, n: null } })).toEqual({ a: 1, n: null });
    expect(propertiesAfter({ $set_once: { n: null } }, { $set_once: { n: 5 } })).toEqual({ n: null });
  });

  test("within one event: $set beats $set_once, $unset beats both", () => {
    expect(propertiesAfter({ $set_once: { a: "once" }, $set: { a: "set" } })).toEqual({ a: "set" });
    expect(
      propertiesAfter({ $set: { a: 0, keep: 1 } }, { $set: { a: 1 }, $set_once: { b: 2 }, $unset: ["a", "b"] }),
    ).toEqual({ keep: 1 });
  });

  test("after an $unset, a later $set_once fills the key again", () => {
    expect(propertiesAfter({ $set: { a: 1 } }, { $unset: ["a"] }, { $set_once: { a: 2 } })).toEqual({ a: 2 });
  });

  test("after an $unset, the first $set_once that follows it wins, not the latest", () => {
    expect(propertiesAfter({ $unset: ["a"] }, { $set_once: { a: "first" } }, { $set_once: { a: "second" } })).toEqual({
      a: "first",
    });
    // $set_once before the $unset does not count, and one in the $unset's own event loses to it
    expect(
      propertiesAfter({ $set_once: { a: "before" } }, { $unset: ["a"], $set_once: { a: "same" } }, { b: 1 }),
    ).toEqual({});
  });

  test("an $unset that arrives late moves which $set_once is the first after it", () => {
    const onces = ["zero", "one", "two", "three"].map((value, second) =>
      intent("p", second, { $set_once: { a: value } }),
    );
    const unset = intent("p", 1, { $unset: ["a"] }); // between "one" (second 1, stamped earlier) and "two"
    const facts = factsOfIntents([...onces, unset]);
    const [component] = settled(components(facts), facts);
    expect(JSON.parse(component!.person()!.properties)).toEqual({ a: "two" });
  });

  test("two persons, each knowing its $set_onces, merge into one that reads again before it tells", () => {
    const facts = factsOfIntents([
      intent("a", 0, { $set: { k: "set" } }),
      intent("b", 3, { $unset: ["k"] }),
      intent("b", 4, { $set_once: { k: "b's" } }),
      intent("a", 5, { $set_once: { k: "a's" } }),
    ]);
    const [first, second] = settled(components(facts), facts);
    const whole = first!.clone();
    whole.absorb(second!);
    expect(whole.onceGaps().map(([key]) => key)).toEqual(["k"]);
    expect(JSON.parse(settled([whole], facts)[0]!.person()!.properties)).toEqual({ k: "b's" });
  });

  test("a fold that lacks the $set_once facts after an $unset says so, and refuses to guess", () => {
    const facts = factsOfIntents([intent("p", 0, { $unset: ["a"] }), intent("p", 1, { $set_once: { a: 1 } })]);
    const [component] = components(facts.filter((fact) => fact.kind !== "once"));
    expect(component!.onceGaps()).toEqual([["a", [at(0), 1]]]);
    expect(() => component!.person()).toThrow('The earliest $set_once of "a" after its $unset was not read');
  });

  test("the latest timestamp wins, whatever order the facts are folded in", () => {
    const late = { $set: { a: "late" } };
    const early = { $set: { a: "early" } };
    expect(propertiesAfter(early, late)).toEqual({ a: "late" });
    const person = personAfter(early, late);
    // the same facts in reverse order fold to the same person
    const [component] = components(factsOfIntents([intent("p", 1, late), intent("p", 0, early)]).reverse());
    expect(JSON.parse(component!.person()!.properties)).toEqual(JSON.parse(person.properties));
  });

  test("keys such as __proto__ are stored as ordinary keys", () => {
    const next = propertiesAfter(JSON.parse('{"$set": {"__proto__": {"polluted": true}, "constructor": 1}}'));
    expect(next).toEqual(JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1}'));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("merges, folded from facts", () => {
  test("a merge keeps both persons' keys; the person born first survives, the other is written deleted", () => {
    const facts = factsOfIntents([
      intent("from", 0, JSON.parse('{"$set": {"a": 1, "b": 2, "__proto__": {"x": 1}}}')),
      intent("into", 1, { $set: { b: 3, c: 4 } }),
      intent("into", 2, { $anon_distinct_id: "from" }, "$identify"),
    ]);
    const [component] = components(facts);
    const survivor = component!.person()!;
    expect(JSON.parse(survivor.properties)).toEqual(JSON.parse('{"a":1,"b":3,"__proto__":{"x":1},"c":4}'));
    expect({ distinctId: survivor.distinctId, createdAt: survivor.createdAt }).toEqual({
      distinctId: "into",
      createdAt: at(0),
    });
    expect(component!.mergedAway(survivor)).toMatchObject([{ distinctId: "into", isDeleted: true }]);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});

describe("$creator_event_uuid, folded from facts", () => {
  /** What an event with this uuid at `second` asks of its person, its creator recorded (`PERSON_CREATOR_EVENT`). */
  const created = (distinctId: string, second: number, uuid: string, properties = {}, name = "e") =>
    personIntentOf({ event: name, distinctId, properties, timestamp: at(second), uuid } as unknown as CapturedEvent, {
      creatorEvent: true,
    });
  const propertiesOf = (facts: FactRow[]) => JSON.parse(components(facts)[0]!.person()!.properties);

  test("a person holds the uuid of the event that created it; later events' do not count", () => {
    const facts = factsOfIntents([created("p", 0, "u-0"), created("p", 1, "u-1", { $set: { a: 1 } })]);
    expect(propertiesOf(facts)).toEqual({ $creator_event_uuid: "u-0", a: 1 });
    expect(propertiesAfter({ $set: { a: 1 } })).toEqual({ a: 1 }); // not recorded: none
  });

  test("merged, the survivor's (born first), whatever order the facts are folded in or collapsed", () => {
    const facts = factsOfIntents([
      created("from", 0, "u-from"),
      created("into", 1, "u-into"),
      created("into", 2, "u-identify", { $anon_distinct_id: "from" }, "$identify"),
    ]);
    // a retry that wrote the survivor's birth again, later, with another uuid: the earliest row of the fact decides
    const again = { ...facts[0]!, at: [at(3), 9], first_once: [0, at(3), 9, '"u-retry"'] } as FactRow;
    for (const order of [facts, [...facts].reverse(), [...facts, again], [again, ...facts].reverse()]) {
      expect(propertiesOf(order).$creator_event_uuid).toBe("u-from");
      expect(propertiesOf(coalesced(order))).toEqual(propertiesOf(order));
    }
  });

  test("a $set replaces it and an $unset removes it, as any property", () => {
    const set = factsOfIntents([
      created("p", 0, "u-0"),
      created("p", 1, "u-1", { $set: { $creator_event_uuid: "x" } }),
    ]);
    expect(propertiesOf(set)).toEqual({ $creator_event_uuid: "x" });
    const unset = factsOfIntents([created("p", 0, "u-0"), created("p", 1, "u-1", { $unset: ["$creator_event_uuid"] })]);
    expect(propertiesOf(unset)).toEqual({});
  });
});

describe("the location, one fact a located event", () => {
  const US = { $geoip_country_code: "US", $geoip_continent_code: "NA" };
  const located = (properties: Record<string, string>) => ({ properties, json: JSON.stringify(properties) });
  /** An event of `p` at `second`, placed in `where`, with PostHog's automatic person properties on. */
  const placed = (
    second: number,
    where: Record<string, string> | undefined,
    properties: Record<string, unknown> = {},
  ) =>
    personIntentOf(
      {
        event: "e",
        distinctId: "p",
        properties,
        timestamp: at(second),
        location: where === undefined ? undefined : located(where),
      } as unknown as CapturedEvent,
      { automaticProperties: true },
    );
  const personOf = (facts: ReturnType<typeof factsOfIntents>) => {
    const [component] = settled(components(facts), facts);
    return JSON.parse(component!.person()!.properties) as Record<string, unknown>;
  };

  test("a new person's location is one fact: each key $set, and $set_once as $initial_geoip_*", () => {
    const facts = factsOfIntents([placed(0, US)]);
    expect(facts.map((fact) => fact.kind)).toEqual(["born", "location"]);
    expect(personOf(facts)).toEqual({
      ...US,
      $initial_geoip_country_code: "US",
      $initial_geoip_continent_code: "NA",
    });
  });

  test("the latest location sets, the earliest sets once, and a key's own $set or $unset competes by when", () => {
    const facts = factsOfIntents([
      placed(3, { $geoip_country_code: "DE" }, { $set: { plan: "b" } }),
      placed(0, US, { $set: { plan: "0" } }),
      placed(1, { $geoip_country_code: "CA" }, { $set: { plan: "a" } }),
      placed(2, undefined, { $set: { $geoip_country_code: "XX" }, $unset: ["$geoip_continent_code"] }),
    ]);
    const expected = {
      $geoip_country_code: "DE",
      $initial_geoip_country_code: "US",
      $initial_geoip_continent_code: "NA",
      plan: "b",
    };
    expect(personOf(facts)).toEqual(expected);
    expect(personOf([...facts].reverse())).toEqual(expected);
    // collapsed as ClickHouse collapses rows of one fact: the same person
    const locations = facts.filter((fact) => fact.kind === "location");
    const latest = locations.reduce((a, b) => (compareTuples(b.last_write, a.last_write) > 0 ? b : a));
    const earliest = locations.reduce((a, b) => (compareTuples(b.first_once, a.first_once) < 0 ? b : a));
    const collapsed = { ...latest, first_once: earliest.first_once, writes: locations.length };
    expect(personOf([...facts.filter((fact) => fact.kind !== "location"), collapsed])).toEqual(expected);
    const later = factsOfIntents([placed(0, US), placed(1, undefined, { $set: { $geoip_country_code: "XX" } })]);
    expect(personOf(later)).toMatchObject({ $geoip_country_code: "XX", $geoip_continent_code: "NA" });
  });

  test("the event's own $geoip_* properties are its location too, over GeoIP's, in the same one fact", () => {
    const facts = factsOfIntents([placed(0, US, { $geoip_city_name: "Boston", $geoip_country_code: "CA", x: 1 })]);
    expect(facts.map((fact) => fact.kind)).toEqual(["born", "location"]);
    expect(personOf(facts)).toEqual({
      $geoip_city_name: "Boston",
      $geoip_country_code: "CA",
      $geoip_continent_code: "NA",
      $initial_geoip_city_name: "Boston",
      $initial_geoip_country_code: "CA",
      $initial_geoip_continent_code: "NA",
    });
  });

  test("the event's own $set, $unset and $set_once of a location key win over its location", () => {
    const facts = factsOfIntents([
      placed(0, US, {
        $set: { $geoip_country_code: "own" },
        $unset: ["$geoip_continent_code"],
        $set_once: { $initial_geoip_country_code: "first" },
      }),
    ]);
    expect(personOf(facts)).toEqual({
      $geoip_country_code: "own",
      $initial_geoip_country_code: "first",
      $initial_geoip_continent_code: "NA",
    });
  });

  test("an event that changes nothing else about its person carries no location; nor does a personless one", () => {
    const facts = factsOfIntents([placed(0, US), placed(1, { $geoip_country_code: "CA" })]);
    expect(facts.map((fact) => fact.kind)).toEqual(["born", "location"]);
    expect(personOf(facts).$geoip_country_code).toBe("US");
    const personless = placed(2, US, { $process_person_profile: false });
    expect(
      personIntentOf({ ...personless.event, personless: true }, { automaticProperties: true }).location,
    ).toBeUndefined();
  });
});
