import type { Session } from "chdb";
import { rows } from "./calls";
import type { SettingTypes } from "./settings";

/** What the port reads of the engine once, when it opens: what it answers and checks requests against. */
export interface Catalogue {
  /** The engine's time zone, for `X-ClickHouse-Timezone`. */
  readonly timezone: string;
  /** Each setting the engine knows, with its type, for the settings allowlist (settings.ts). */
  readonly settingTypes: SettingTypes;
  /** The engine's output formats by their names in lower case (a client's `default_format=arrow`). */
  readonly formats: ReadonlyMap<string, string>;
}

export async function readCatalogue(session: Session): Promise<Catalogue> {
  const [[timezone = "UTC"] = []] = await rows(session, "SELECT timezone()");
  const types = (await rows(session, "SELECT name, type FROM system.settings")) as [string, string][];
  const formats = (await rows(session, "SELECT name FROM system.formats WHERE is_output")).map(([name]) => name!);
  return {
    timezone,
    settingTypes: new Map(types),
    formats: new Map(formats.map((name) => [name.toLowerCase(), name])),
  };
}
