import { isRawNumber } from "../../contract";

/** The exports `ingest import` reads. */
export const FORMAT_NAMES = ["posthog", "mixpanel", "amplitude", "segment"] as const;
export type FormatName = (typeof FORMAT_NAMES)[number];

/** What a line holds: the `/batch/` items it yields, in order, or why it yields none. */
export type Records = { readonly items: readonly unknown[] } | { readonly reason: "not an event" };

export const NOT_AN_EVENT: Records = { reason: "not an event" };

/** One vendor's export lines as `/batch/` items (docs/import.md#formats). */
export interface Format {
  readonly name: FormatName;
  /** Whether a parsed line has this export's shape: how a file's format is found from its first line. */
  readonly matches: (record: unknown) => boolean;
  readonly records: (record: unknown, memory: ImportMemory) => Records;
}

/** The namespace of every UUID an import derives (UUIDv5): fixed, so a re-run derives the same ones. */
export const IMPORT_NAMESPACE = "5a0b7c3e-2f0d-4d1e-9a55-6e7f1c2b3d4a";

/** The UUID of an event from a source's own ID for it: UUIDv5 of the format's name and the ID's parts. */
export function sourceUuid(format: FormatName, ...parts: readonly string[]): string {
  return Bun.randomUUIDv5([format, ...parts].join("\n"), IMPORT_NAMESPACE);
}

/** A source's ID (a string, or a number taken as its digits), or undefined. */
export function idText(value: unknown): string | undefined {
  if (typeof value === "string") return value === "" ? undefined : value;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (isRawNumber(value)) return value.rawJSON;
  return undefined;
}

/**
 * What an import remembers across lines, in bounded memory: which (user, anonymous ID) pairs it has already linked,
 * and a digest of what it last set on each ID. Once it holds `limit` entries it forgets them all, which costs at
 * most a repeated `$identify` or `$set`, both harmless.
 */
export class ImportMemory {
  readonly #seen = new Map<string, number | bigint>();
  constructor(private readonly limit = 100_000) {}

  /** True the first time a pair is seen (or seen again after forgetting). */
  firstLink(distinctId: string, anonymousId: string): boolean {
    return this.#changed(`link\0${distinctId}\0${anonymousId}`, 1);
  }

  /** True when `properties` differ from what was last set on the ID (or nothing was). */
  setChanged(distinctId: string, properties: unknown): boolean {
    return this.#changed(`set\0${distinctId}`, Bun.hash(JSON.stringify(properties)));
  }

  #changed(key: string, value: number | bigint): boolean {
    if (this.#seen.get(key) === value) return false;
    if (this.#seen.size >= this.limit) this.#seen.clear();
    this.#seen.set(key, value);
    return true;
  }
}

/**
 * The `$identify` that puts `anonymousId` on `distinctId`'s person, for an export that says so only by an event
 * carrying both: emitted before the first such event of the import, at its timestamp, with a UUID of the pair, so
 * importing the file again stores it once.
 */
export function linkEvent(
  format: FormatName,
  distinctId: string,
  anonymousId: string,
  timestamp: unknown,
  memory: ImportMemory,
): unknown[] {
  if (distinctId === anonymousId || !memory.firstLink(distinctId, anonymousId)) return [];
  return [
    {
      event: "$identify",
      distinct_id: distinctId,
      timestamp,
      uuid: sourceUuid(format, "$identify", distinctId, anonymousId),
      properties: { $anon_distinct_id: anonymousId },
    },
  ];
}

/** The entries of `values` that are not undefined or null, for building properties. */
export function defined(values: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values)) if (value !== undefined && value !== null) kept[key] = value;
  return kept;
}
