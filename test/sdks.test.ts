import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PostHog } from "posthog-node";
import { personIdFor } from "../src/identity";
import { events, links, personOf } from "./helpers/rows";
import { startService, type TestService } from "./helpers/service";

// Each PostHog SDK's wire shape, as the SDK itself sends it: posthog-node runs for real; the others' bodies are
// built exactly as their source builds them (the file each case follows is named at the case).

const KEY = "phc_sdk_key";
let service: TestService;

beforeAll(async () => {
  service = await startService({ PUBLIC_API_KEYS: KEY, MAX_EVENTS_PER_BATCH: "5" });
});
afterAll(() => service.stop());

interface Wire {
  readonly path?: string;
  readonly query?: string;
  readonly headers: Record<string, string>;
  readonly json: string;
  readonly gzip?: boolean;
}

async function post({ path = "/batch/", query = "", headers, json, gzip }: Wire) {
  const response = await fetch(`${service.url}${path}${query}`, {
    method: "POST",
    headers: gzip ? { ...headers, "Content-Encoding": "gzip" } : headers,
    body: gzip ? Bun.gzipSync(json) : json,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const storedEvents = async (distinctId: string) =>
  (await events(service.db)).filter((event) => event.distinct_id === distinctId);

describe("posthog-node (the real package, 5.70.0)", () => {
  for (const disableCompression of [false, true]) {
    test(`capture, identify with $set and alias land${disableCompression ? " (no gzip)" : " (gzip)"}`, async () => {
      const id = `node-${disableCompression ? "plain" : "gzip"}`;
      const client = new PostHog(KEY, { host: service.url, flushAt: 50, flushInterval: 0, disableCompression });
      client.capture({ distinctId: `${id}-anon`, event: "viewed", properties: { $current_url: "https://a.example/" } });
      client.identify({ distinctId: id, properties: { plan: "pro" } });
      client.alias({ distinctId: id, alias: `${id}-anon` });
      client.capture({ distinctId: id, event: "purchased", properties: { $set_once: { first: "yes" } } });
      await client.shutdown();

      const person = await personOf(service.db, id);
      // the anonymous visitor's first page made its person: PostHog's automatic properties came with it
      expect(person?.properties).toEqual({
        plan: "pro",
        first: "yes",
        $current_url: "https://a.example/",
        $initial_current_url: "https://a.example/",
      });
      expect((await links(service.db)).get(`${id}-anon`)?.person_id).toBe(person?.id);
      expect((await storedEvents(`${id}-anon`)).map((e) => [e.event, e.current_url])).toEqual([
        ["viewed", "https://a.example/"],
      ]);
      expect((await storedEvents(id)).map((e) => e.event).sort()).toEqual(["$create_alias", "$identify", "purchased"]);
    });
  }

  test("groupIdentify makes a group; events captured with groups carry $groups; no person for the group's ID", async () => {
    const client = new PostHog(KEY, { host: service.url, flushAt: 50, flushInterval: 0 });
    client.groupIdentify({ groupType: "company", groupKey: "node-co", properties: { plan: "scale", seats: 12 } });
    client.capture({ distinctId: "node-member", event: "invoice paid", groups: { company: "node-co" } });
    await client.shutdown();

    const [group] = await service.db.rows<{ properties: string }>(
      `SELECT properties FROM ${service.db.table("groups")} FINAL WHERE group_type = 'company' AND group_key = 'node-co'`,
    );
    expect(JSON.parse(group!.properties)).toEqual({ plan: "scale", seats: 12 });
    const [identified] = (await events(service.db)).filter((event) => event.event === "$groupidentify");
    expect(identified!.distinct_id).toBe("$company_node-co");
    expect(await personOf(service.db, "$company_node-co")).toBeUndefined();
    const [paid] = await storedEvents("node-member");
    expect(JSON.parse(paid!.properties).$groups).toEqual({ company: "node-co" });
  });

  test("a 413 makes it halve its batches until they fit (MAX_EVENTS_PER_BATCH is 5 here); every event lands once", async () => {
    const client = new PostHog(KEY, { host: service.url, flushAt: 100, flushInterval: 0, maxBatchSize: 20 });
    for (let i = 0; i < 20; i++) client.capture({ distinctId: "node-split", event: `split-${i}` });
    await client.shutdown();
    const stored = await storedEvents("node-split");
    expect(stored.map((e) => e.event).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `split-${i}`).sort());
  });
});

describe("posthog-python (posthog/request.py batch_post, posthog/client.py)", () => {
  // request.py: json.dumps (ASCII-escaped), Content-Type application/json, gzip optional; body batch + sentAt + api_key.
  // client.py: set()/set_once() put $set/$set_once at event level; alias() sends distinct_id=previous_id with
  // properties.alias; group_identify sends $groupidentify; _enqueue adds $lib; timestamps are isoformat().
  const python = (batch: object[], gzip: boolean): Wire => ({
    headers: { "Content-Type": "application/json", "User-Agent": "posthog-python/6.7.0" },
    json: JSON.stringify({
      batch,
      historical_migration: false,
      sentAt: "2024-05-01T12:00:01.000001+00:00",
      api_key: KEY,
    })
      // json.dumps escapes every non-ASCII character
      .replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
    gzip,
  });
  const lib = { $lib: "posthog-python", $lib_version: "6.7.0" };
  const at = "2024-05-01T12:00:00.123456+00:00";

  for (const gzip of [false, true]) {
    test(`capture, set, set_once, alias and group_identify${gzip ? " (gzip)" : ""}`, async () => {
      const id = `py-${gzip ? "gzip" : "plain"}`;
      const sent = await post(
        python(
          [
            {
              properties: { city: "Zürich", ...lib },
              timestamp: at,
              distinct_id: id,
              event: "signed_up",
              uuid: Bun.randomUUIDv7(),
            },
            {
              timestamp: at,
              distinct_id: id,
              $set: { plan: "pro", city: "Zürich" },
              event: "$set",
              uuid: Bun.randomUUIDv7(),
              properties: lib,
            },
            {
              timestamp: at,
              distinct_id: id,
              $set_once: { first_seen: "2024-05-01" },
              event: "$set_once",
              uuid: Bun.randomUUIDv7(),
              properties: lib,
            },
            {
              properties: { distinct_id: id, alias: `${id}-old`, ...lib },
              timestamp: at,
              event: "$create_alias",
              distinct_id: id,
              uuid: Bun.randomUUIDv7(),
            },
            {
              event: "$groupidentify",
              properties: { $group_type: "company", $group_key: id, $group_set: { name: "Acme" }, ...lib },
              distinct_id: `$company_${id}`,
              timestamp: at,
              uuid: Bun.randomUUIDv7(),
            },
          ],
          gzip,
        ),
      );
      expect(sent).toEqual({ status: 200, body: { status: "ok", ingested: 5, dropped: 0 } });
      const person = await personOf(service.db, id);
      expect(person?.properties).toEqual({ plan: "pro", city: "Zürich", first_seen: "2024-05-01" });
      expect((await links(service.db)).get(`${id}-old`)?.person_id).toBe(person?.id);
      const [signedUp] = (await storedEvents(id)).filter((e) => e.event === "signed_up");
      expect(JSON.parse(signedUp!.properties).city).toBe("Zürich");
      expect(signedUp!.timestamp).toBe("2024-05-01 12:00:00.123456");
      expect((await storedEvents(`$company_${id}`)).map((e) => e.event)).toEqual(["$groupidentify"]);
    });
  }

  test("integer distinct IDs (older releases send the int as given) keep every digit", async () => {
    const wire = python(
      [
        { properties: lib, timestamp: at, distinct_id: 1, event: "int_id", uuid: Bun.randomUUIDv7() },
        { properties: lib, timestamp: at, distinct_id: 42, event: "int_id", uuid: Bun.randomUUIDv7() },
      ],
      false,
    );
    // the digits a Python int carries, which a JavaScript number literal cannot
    const sent = await post({
      ...wire,
      json: wire.json.replace('"distinct_id":1,', '"distinct_id":12345678901234567890,'),
    });
    expect(sent.status).toBe(200);
    expect((await storedEvents("12345678901234567890")).map((e) => e.person_id)).toEqual([
      personIdFor("12345678901234567890"),
    ]);
    expect(await storedEvents("42")).toHaveLength(1);
  });
});

describe("posthog-ruby (lib/posthog/transport.rb, defaults.rb, field_parser.rb)", () => {
  // transport.rb: JSON.generate(api_key:, batch:) to PATH '/batch/' with defaults.rb HEADERS (Accept,
  // Content-Type application/json, User-Agent); Net::HTTP adds Accept-Encoding. The transport versions read here
  // send the body uncompressed; gzip is replayed too, for releases that compress.
  // field_parser.rb: identify sends $set at event level and the same keys in properties; alias sends properties
  // distinct_id + alias; every message has type, $lib, $is_server and an ISO 8601 timestamp with milliseconds.
  const ruby = (batch: object[], gzip: boolean): Wire => ({
    headers: {
      Accept: "application/json",
      "Content-Type": "application/json",
      "User-Agent": "posthog-ruby/3.3.0",
      "Accept-Encoding": "gzip;q=1.0,deflate;q=0.6,identity;q=0.3",
    },
    json: JSON.stringify({ api_key: KEY, batch }),
    gzip,
  });
  const common = (id: string) => ({
    timestamp: "2024-05-01T12:00:00.123+00:00",
    distinct_id: id,
    uuid: Bun.randomUUIDv7(),
  });
  const lib = { $lib: "posthog-ruby", $lib_version: "3.3.0", $is_server: true };

  for (const gzip of [false, true]) {
    test(`identify and alias${gzip ? " (gzip)" : ""}`, async () => {
      const id = `rb-${gzip ? "gzip" : "plain"}`;
      const sent = await post(
        ruby(
          [
            {
              ...common(id),
              type: "identify",
              event: "$identify",
              $set: { email: "a@example.com" },
              properties: { email: "a@example.com", ...lib },
            },
            {
              ...common(id),
              type: "alias",
              event: "$create_alias",
              properties: { distinct_id: id, alias: `${id}-anon`, ...lib },
            },
            { ...common(id), type: "capture", event: "ordered", properties: { total: 9.99, ...lib } },
          ],
          gzip,
        ),
      );
      expect(sent).toEqual({ status: 200, body: { status: "ok", ingested: 3, dropped: 0 } });
      const person = await personOf(service.db, id);
      expect(person?.properties).toEqual({ email: "a@example.com" });
      expect(person?.is_identified).toBe(1);
      expect((await links(service.db)).get(`${id}-anon`)?.person_id).toBe(person?.id);
    });
  }
});

describe("posthog-php (lib/Client.php)", () => {
  // Client.php alias(): properties.distinct_id and properties.alias, then `$message['distinct_id'] = null`;
  // identify(): $set at event level from the properties; the consumer posts {batch, api_key} as JSON.
  test("alias with a top-level distinct_id of null, and identify with event-level $set", async () => {
    const sent = await post({
      headers: { "Content-Type": "application/json", "User-Agent": "posthog-php/3.6.0" },
      json: JSON.stringify({
        batch: [
          {
            properties: { $lib: "posthog-php", $lib_version: "3.6.0" },
            distinct_id: "php-user",
            $set: { company: "Acme" },
            timestamp: "2024-05-01T12:00:00+00:00",
            type: "identify",
            event: "$identify",
            library: "posthog-php",
          },
          {
            properties: { $lib: "posthog-php", distinct_id: "php-user", alias: "php-anon" },
            distinct_id: null,
            timestamp: "2024-05-01T12:00:00+00:00",
            type: "alias",
            event: "$create_alias",
            library: "posthog-php",
          },
        ],
        api_key: KEY,
      }),
    });
    expect(sent).toEqual({ status: 200, body: { status: "ok", ingested: 2, dropped: 0 } });
    const person = await personOf(service.db, "php-user");
    expect(person?.properties).toEqual({ company: "Acme" });
    expect((await links(service.db)).get("php-anon")?.person_id).toBe(person?.id);
  });
});

describe("posthog-go (identify.go, compression_test.go)", () => {
  // compression_test.go: without compression POST /batch/ with Content-Type application/json and body
  // {api_key, batch}; with CompressionGzip the URL becomes /batch/?compression=gzip with Content-Encoding gzip.
  // identify.go: $set at event level, properties hold $lib; timestamps are RFC 3339 with nanoseconds.
  const go = (batch: object[]) => JSON.stringify({ api_key: KEY, batch });
  const identify = {
    type: "identify",
    uuid: "0190b4a1-7c2d-7e3f-8a4b-5c6d7e8f9a0b",
    library: "posthog-go",
    library_version: "1.6.0",
    timestamp: "2024-05-01T12:00:00.123456789Z",
    event: "$identify",
    distinct_id: "go-user",
    properties: { $lib: "posthog-go", $lib_version: "1.6.0" },
    $set: { team: "core" },
  };

  test("without gzip: stored, with the person's $set", async () => {
    const sent = await post({
      headers: { "Content-Type": "application/json", "User-Agent": "posthog-go" },
      json: go([identify]),
    });
    expect(sent).toEqual({ status: 200, body: { status: "ok", ingested: 1, dropped: 0 } });
    expect((await personOf(service.db, "go-user"))?.properties).toEqual({ team: "core" });
    expect((await storedEvents("go-user"))[0]?.timestamp).toBe("2024-05-01 12:00:00.123456");
  });

  test("with gzip it adds ?compression=gzip, which the spec refuses: 415 with the hint to use Content-Encoding", async () => {
    const sent = await post({
      query: "?compression=gzip",
      headers: { "Content-Type": "application/json" },
      json: go([{ ...identify, distinct_id: "go-gzip", uuid: Bun.randomUUIDv7() }]),
      gzip: true,
    });
    expect(sent.status).toBe(415);
    expect(sent.body).toEqual({
      status: "error",
      error:
        "The compression query parameter is not supported. Send gzip-compressed JSON with Content-Encoding: gzip instead.",
    });
    expect(await storedEvents("go-gzip")).toEqual([]);
  });
});

describe("posthog-android / posthog-ios / posthog-java (PostHogApi.kt batch())", () => {
  // PostHogApi.kt: POST "$host/batch" (no trailing slash), "application/json; charset=utf-8", body
  // {api_key, batch, sent_at}; newer releases gzip it. identify puts $anon_distinct_id and $set in properties.
  for (const gzip of [false, true]) {
    test(`/batch without a slash, charset=utf-8${gzip ? ", gzip" : ""}`, async () => {
      const id = `mobile-${gzip ? "gzip" : "plain"}`;
      const sent = await post({
        path: "/batch",
        headers: { "Content-Type": "application/json; charset=utf-8", "User-Agent": "posthog-android/3.9.0" },
        json: JSON.stringify({
          api_key: KEY,
          batch: [
            {
              event: "$screen",
              distinct_id: `${id}-anon`,
              properties: { $screen_name: "Home", $lib: "posthog-android" },
              timestamp: "2024-05-01T12:00:00.123Z",
              uuid: Bun.randomUUIDv7(),
            },
            {
              event: "$identify",
              distinct_id: id,
              properties: { $anon_distinct_id: `${id}-anon`, $set: { name: "Ada" }, $lib: "posthog-android" },
              timestamp: "2024-05-01T12:00:01.123Z",
              uuid: Bun.randomUUIDv7(),
            },
          ],
          sent_at: "2024-05-01T12:00:02.000Z",
        }),
        gzip,
      });
      expect(sent).toEqual({ status: 200, body: { status: "ok", ingested: 2, dropped: 0 } });
      const person = await personOf(service.db, id);
      expect(person?.properties).toEqual({ name: "Ada" });
      expect((await links(service.db)).get(`${id}-anon`)?.person_id).toBe(person?.id);
    });
  }
});
