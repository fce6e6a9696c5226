import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { automaticUpdatesOf } from "../../src/identity/automatic";
import { count, links, personOf } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";

describe("automaticUpdatesOf", () => {
  test("each key PostHog lifts is $set, and $set_once as $initial_<key without $>", () => {
    const found = automaticUpdatesOf({ $browser: "Firefox", utm_source: "ads", $lib: "web", plan: "pro" });
    expect(found).toEqual({
      set: { $browser: "Firefox", utm_source: "ads" },
      setOnce: { $initial_browser: "Firefox", $initial_utm_source: "ads" },
      changes: true,
    });
  });

  test("keys that churn with every page make no person write alone; none at all is nothing", () => {
    expect(automaticUpdatesOf({ $current_url: "https://a/", $browser: "Chrome", $os: "Mac OS X" })?.changes).toBe(
      false,
    );
    expect(automaticUpdatesOf({ $app_version: "1.2" })?.changes).toBe(true);
    expect(automaticUpdatesOf({ plan: "pro", $lib: "posthog-node" })).toBeUndefined();
  });

  test("a null is $set but never a first touch; $os_name stands in for $os; a server SDK's $os is not the user's", () => {
    expect(automaticUpdatesOf({ gclid: null })).toEqual({ set: { gclid: null }, setOnce: {}, changes: true });
    expect(automaticUpdatesOf({ $os_name: "Android" })?.set).toEqual({ $os: "Android" });
    expect(automaticUpdatesOf({ $os: "Linux", $os_version: "6", $is_server: true })).toBeUndefined();
  });
});

describe("PostHog's automatic person properties", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ PUBLIC_API_KEYS: KEY });
  });
  afterAll(() => service.stop());
  const capture = async (batch: object[]) => expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
  const versions = async (id: string) =>
    count(service.db, "persons", `id = '${(await links(service.db)).get(id)!.person_id}'`);

  test("a new visitor's person gets the page, device and campaign, and the first touch", async () => {
    await capture([
      {
        event: "$pageview",
        distinct_id: "auto-1",
        properties: { $current_url: "https://site/a?utm_source=ads", $browser: "Firefox", utm_source: "ads" },
      },
    ]);
    expect((await personOf(service.db, "auto-1"))?.properties).toEqual({
      $current_url: "https://site/a?utm_source=ads",
      $browser: "Firefox",
      utm_source: "ads",
      $initial_current_url: "https://site/a?utm_source=ads",
      $initial_browser: "Firefox",
      $initial_utm_source: "ads",
    });
  });

  test("a later page that changes only churning keys writes no person row; a change of campaign does", async () => {
    const before = await versions("auto-1");
    await capture([
      { event: "$pageview", distinct_id: "auto-1", properties: { $current_url: "https://site/b", $browser: "Chrome" } },
    ]);
    expect(await versions("auto-1")).toBe(before);
    expect((await personOf(service.db, "auto-1"))?.properties).toMatchObject({
      $current_url: "https://site/a?utm_source=ads",
    });
    await capture([
      { event: "$pageview", distinct_id: "auto-1", properties: { $current_url: "https://site/c", utm_source: "mail" } },
    ]);
    expect(await versions("auto-1")).toBe(before + 1);
    expect((await personOf(service.db, "auto-1"))?.properties).toMatchObject({
      $current_url: "https://site/c",
      utm_source: "mail",
      $initial_utm_source: "ads",
      $initial_current_url: "https://site/a?utm_source=ads",
    });
  });

  test("an event that changes the person anyway carries its churning keys along; its own $set wins a key", async () => {
    await capture([
      {
        event: "signed_up",
        distinct_id: "auto-1",
        properties: { $current_url: "https://site/d", $browser: "Safari", $set: { plan: "pro", $browser: "Mine" } },
      },
    ]);
    expect((await personOf(service.db, "auto-1"))?.properties).toMatchObject({
      plan: "pro",
      $current_url: "https://site/d",
      $browser: "Mine",
      $initial_browser: "Firefox",
    });
  });

  test("personless events lift nothing", async () => {
    await capture([
      { event: "$pageview", distinct_id: "auto-2", properties: { utm_source: "x", $process_person_profile: false } },
    ]);
    expect(await personOf(service.db, "auto-2")).toBeUndefined();
  });
});

test("PERSON_AUTO_PROPERTIES=0: persons get only what events $set", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY, PERSON_AUTO_PROPERTIES: "0" });
  try {
    const batch = [
      { event: "$pageview", distinct_id: "auto-off", properties: { $browser: "Firefox", utm_source: "ads" } },
    ];
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
    expect((await personOf(service.db, "auto-off"))?.properties).toEqual({});
  } finally {
    await service.stop();
  }
});
