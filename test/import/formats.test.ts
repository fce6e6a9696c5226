import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { directTarget, type FormatName, type Rejected, runImport } from "../../src/import";
import { amplitude, detectFormat, ImportMemory, mixpanel, segment } from "../../src/import/formats";
import type { ClickHouse } from "../../src/storage/clickhouse";
import { count, events, links, type StoredEvent, withoutAutomatic } from "../helpers/rows";
import { clickhouseEnv, openDb, uniqueDatabase } from "../helpers/service";

// Each vendor's export, from sample files written after the vendor's documented format, imported in this process:
// which field is the distinct ID, which identity event it makes, which column gets the URL, where the rest goes.

const samples = join(import.meta.dir, "samples");
const sample = (name: FormatName) => join(samples, `${name}.jsonl`);
const firstLine = (name: FormatName) => JSON.parse(readFileSync(sample(name), "utf8").split("\n")[0]!);

const config = loadConfig({ ...clickhouseEnv(), CLICKHOUSE_DATABASE: uniqueDatabase() });
let db: ClickHouse;
beforeAll(async () => {
  db = await openDb(config.clickhouse.database);
});
afterAll(async () => {
  await db.command(`DROP DATABASE IF EXISTS \`${config.clickhouse.database}\``);
  await db.close();
});

async function importSample(name: FormatName, format?: FormatName) {
  const rejected: Rejected[] = [];
  const target = await directTarget(config);
  try {
    const summary = await runImport({
      files: [sample(name)],
      target,
      batchSize: 3,
      inFlight: 2,
      maxLineBytes: 1 << 20,
      strict: false,
      ...(format !== undefined && { format }),
      onReject: (r) => rejected.push(r),
    });
    return { summary, rejected: rejected.map((r) => [r.line, r.reason]) };
  } finally {
    await target.close();
  }
}

/** The stored events whose distinct ID starts with `prefix`, by time, with parsed properties. */
async function storedOf(prefix: string) {
  return (await events(db, { final: true }))
    .filter((e) => e.distinct_id.startsWith(prefix))
    .map((e: StoredEvent) => ({ ...e, properties: JSON.parse(e.properties) as Record<string, unknown> }));
}

/** Whether every ID resolves to one person. */
async function onePerson(...distinctIds: string[]) {
  const all = await links(db);
  return new Set(distinctIds.map((id) => all.get(id)?.person_id ?? `none:${id}`)).size === 1;
}

describe("detection, from a file's first line of JSON", () => {
  const cases: [string, unknown, FormatName][] = [
    ["PostHog's sample", firstLine("posthog"), "posthog"],
    ["a Mixpanel export", firstLine("mixpanel"), "mixpanel"],
    ["an Amplitude export", firstLine("amplitude"), "amplitude"],
    ["a Segment message", firstLine("segment"), "segment"],
    ["a RudderStack message", { type: "track", event: "x", anonymousId: "a", rudderId: "r" }, "segment"],
    ["a PostHog event", { event: "e", distinct_id: "d", properties: { time: 1 } }, "posthog"],
    ["a PostHog event with a timestamp", { event: "e", timestamp: "2024-05-01T00:00:00Z", properties: {} }, "posthog"],
    ["a /batch/ body", { api_key: "k", batch: [{ event: "e", distinct_id: "d" }] }, "posthog"],
    ["an array of Segment messages", [{ type: "page", anonymousId: "a" }], "segment"],
    ["a PostHog export row", { uuid: "u", event: "e", distinct_id: "d", properties: "{}" }, "posthog"],
    ["anything else", 42, "posthog"],
  ];
  for (const [what, record, format] of cases) {
    test(`${what} is read as ${format}`, () => expect(detectFormat(record).name).toBe(format));
  }
});

describe("Mixpanel", () => {
  let stored: Awaited<ReturnType<typeof storedOf>>;
  test("every line but the one without time is imported, with a $identify where $user_id meets $device_id", async () => {
    const { summary, rejected } = await importSample("mixpanel");
    expect(summary).toMatchObject({ formats: { [sample("mixpanel")]: "mixpanel" }, lines: 8, imported: 8 });
    expect(rejected).toEqual([[8, "no timestamp"]]);
    stored = [...(await storedOf("mp-")), ...(await storedOf("$device:mp-"))];
    expect(stored.map((e) => e.event).sort()).toEqual(
      [
        "$pageview",
        "$identify",
        "Signed Up",
        "Purchase",
        "Viewed Item",
        "$identify",
        "$create_alias",
        "$create_alias",
      ].sort(),
    );
  });

  test("time in seconds or milliseconds; $mp_web_page_view is a $pageview with its URL; geolocation renamed", () => {
    const pageview = stored.find((e) => e.event === "$pageview")!;
    expect(pageview).toMatchObject({
      distinct_id: "$device:mp-d1",
      timestamp: "2024-05-01 10:00:00.000000",
      current_url: "https://shop.example/",
    });
    expect(pageview.properties).toMatchObject({
      $geoip_city_name: "Berlin",
      $geoip_subdivision_1_name: "Berlin",
      $geoip_country_code: "DE",
      mp_lib: "web",
      $device_id: "mp-d1",
    });
    expect(pageview.properties).not.toHaveProperty("time");
    expect(pageview.properties).not.toHaveProperty("$insert_id");
    expect(stored.find((e) => e.event === "Signed Up")?.timestamp).toBe("2024-05-01 10:01:00.123000");
  });

  test("identity: the device joins its user; $identify's $anon_id, $merge and $create_alias join theirs", async () => {
    expect(await onePerson("$device:mp-d1", "mp-u1")).toBe(true);
    expect(await onePerson("mp-anon2", "mp-u2", "mp-u3", "mp-u3-email")).toBe(true);
    expect(await onePerson("mp-u1", "mp-u2")).toBe(false);
  });

  test("importing it again stores nothing twice: the UUIDs come from $insert_id", async () => {
    await importSample("mixpanel");
    expect(
      await count(db, "events", "startsWith(distinct_id, 'mp-') OR startsWith(distinct_id, '$device:mp-')", {
        final: true,
      }),
    ).toBe(8);
  });
});

describe("Amplitude", () => {
  let stored: Awaited<ReturnType<typeof storedOf>>;
  test("every line but the one without event_time is imported, with one $identify per user and device", async () => {
    const { summary, rejected } = await importSample("amplitude");
    expect(rejected).toEqual([[7, "no timestamp"]]);
    expect(summary).toMatchObject({ formats: { [sample("amplitude")]: "amplitude" }, lines: 7, imported: 8 });
    stored = await storedOf("amp-");
    expect(
      stored.filter((e) => e.event === "$identify").map((e) => [e.distinct_id, e.properties.$anon_distinct_id]),
    ).toEqual([
      ["amp-user1", "amp-dev1"],
      ["amp-user1", "amp-dev2"],
    ]);
  });

  test("a page view is a $pageview with its URL and session; columns keep their values", () => {
    const pageview = stored.find((e) => e.event === "$pageview")!;
    expect(pageview).toMatchObject({
      distinct_id: "amp-dev1",
      timestamp: "2024-05-01 10:00:00.123456",
      current_url: "https://app.example/pricing",
      session_id: "1714557600000",
    });
    expect(pageview.properties).toMatchObject({
      $pathname: "/pricing",
      $host: "app.example",
      $referrer: "https://search.example/",
      $ip: "203.0.113.7",
      $geoip_country_name: "Germany",
      $os: "Chrome",
      $device_id: "amp-dev1",
      $amplitude_id: 987654321,
      $amplitude_event_id: 1,
      $amplitude_platform: "Web",
      $amplitude_library: "amplitude-ts/2.7.0",
    });
    expect(stored.find((e) => e.event === "Purchase")?.session_id).toBe(""); // session_id -1: none
  });

  test("identity: both devices join the user; user_properties and $set/$setOnce/$unset reach the person", async () => {
    expect(await onePerson("amp-dev1", "amp-user1", "amp-dev2")).toBe(true);
    const person = await personProperties("amp-user1");
    expect(person).toEqual({ initial_referrer: "https://search.example/", plan: "pro", first_seen: "2024-05-01" });
    const identify = stored.find((e) => e.event === "$set")!; // Amplitude's $identify: a property update
    expect(identify.properties.$amplitude_user_properties).toEqual({ $add: { logins: 1 } });
  });

  test("user_properties unchanged since the ID's last event are not set again", () => {
    const purchases = stored.filter((e) => e.event === "Purchase");
    expect(purchases.map((e) => e.properties.$set)).toEqual([{ plan: "pro" }, undefined]);
  });

  test("importing it again stores nothing twice: the UUIDs come from uuid, else $insert_id", async () => {
    await importSample("amplitude");
    expect(await count(db, "events", "startsWith(distinct_id, 'amp-')", { final: true })).toBe(8);
  });
});

describe("Segment and RudderStack", () => {
  let stored: Awaited<ReturnType<typeof storedOf>>;
  test("every message with a name is imported; one without is rejected", async () => {
    const { summary, rejected } = await importSample("segment");
    expect(rejected).toEqual([[9, "no event name"]]);
    expect(summary).toMatchObject({ formats: { [sample("segment")]: "segment" }, lines: 9, imported: 9 });
    stored = await storedOf("seg-");
    expect(stored.map((e) => e.event).sort()).toEqual(
      [
        "$pageview",
        "$identify",
        "Order Completed",
        "$identify", // seg-a2 meets seg-u1
        "Order Completed",
        "$create_alias",
        "$screen",
        "$groupidentify",
        "$identify",
      ].sort(),
    );
  });

  test("page: a $pageview with its URL; context mapped to PostHog's properties and kept whole", () => {
    const pageview = stored.find((e) => e.event === "$pageview");
    expect(pageview).toMatchObject({ distinct_id: "seg-a1", current_url: "https://site.example/pricing" });
    expect(pageview!.properties).toMatchObject({
      $pathname: "/pricing",
      $title: "Pricing",
      $referrer: "https://search.example/",
      $ip: "203.0.113.9",
      $raw_user_agent: "Mozilla/5.0",
      $lib: "analytics.js",
      utm_source: "newsletter",
      utm_campaign: "spring",
      $segment_name: "Pricing",
      $segment_receivedAt: "2024-05-01T10:00:00.250Z",
    });
    expect((pageview!.properties.$segment_context as { locale: string }).locale).toBe("en-US");
    const screen = stored.find((e) => e.event === "$screen")!;
    expect(screen.properties).toMatchObject({ $screen_name: "Home", $os: "iOS", $device_model: "iPhone15,2" });
    const group = stored.find((e) => e.event === "$groupidentify")!;
    expect(group.properties).toMatchObject({
      $group_type: "company",
      $group_key: "seg-g1",
      $group_set: { name: "Acme" },
    });
  });

  test("identity: identify joins anonymousId to userId, a message with both joins it too, alias joins previousId", async () => {
    expect(await onePerson("seg-a1", "seg-u1", "seg-a2", "seg-old1")).toBe(true);
    expect(await onePerson("seg-a9", "seg-u9")).toBe(true);
    expect(await personProperties("seg-u1")).toEqual({ email: "u1@example.com", plan: "pro" });
    // the page's campaign parameters reach the person as PostHog's automatic properties, first touch kept
    const link = (await links(db)).get("seg-u1");
    const [row] = await db.rows<{ properties: string }>(
      `SELECT properties FROM ${db.table("persons")} FINAL WHERE id = '${link!.person_id}'`,
    );
    expect(JSON.parse(row!.properties)).toMatchObject({ utm_source: "newsletter", $initial_utm_source: "newsletter" });
    expect(await personProperties("seg-u9")).toEqual({ email: "u9@example.com" }); // RudderStack: context.traits
    expect(stored.at(-1)!.timestamp).toBe("2024-05-01 12:00:00.000000"); // no timestamp: originalTimestamp
  });

  test("importing it again stores nothing twice: the UUIDs come from messageId", async () => {
    await importSample("segment");
    expect(await count(db, "events", "startsWith(distinct_id, 'seg-')", { final: true })).toBe(9);
  });
});

describe("--format", () => {
  test("overrides detection: a Segment file read as PostHog's events has no event names or distinct IDs", async () => {
    const { summary } = await importSample("segment", "posthog");
    expect(summary).toMatchObject({
      imported: 0,
      rejected: { "no event name": 6, "no distinct ID": 2, "no timestamp": 1 },
    });
  });

  test("the mappings are pure: the same line gives the same items, whatever came before in another import", () => {
    for (const format of [mixpanel, amplitude, segment]) {
      const line = firstLine(format.name);
      expect(format.records(line, new ImportMemory())).toEqual(format.records(line, new ImportMemory()));
    }
  });
});

async function personProperties(distinctId: string) {
  const link = (await links(db)).get(distinctId);
  const [row] = await db.rows<{ properties: string }>(
    `SELECT properties FROM ${db.table("persons")} FINAL WHERE id = '${link!.person_id}'`,
  );
  return withoutAutomatic(JSON.parse(row!.properties));
}
