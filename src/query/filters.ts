import type { Session } from "chdb";
import { literal } from "../storage";
import { rows } from "./calls";
import { QueryError } from "./errors";
import { inspect } from "./inspect";
import type { SessionParams } from "./params";
import { SQL_VALUED } from "./settings";

/**
 * Settings whose values are SQL (`additional_table_filters`, `additional_result_filter`): the engine adds their
 * SQL to a query, so it passes the policy first, and they are set only once checked, just before the statement
 * runs: on the session before, they would filter the port's own queries (the catalogue it checks against among
 * them).
 */

/** The SQL-valued settings among a request's; refused on a named session, which keeps its settings as set. */
export function sqlValuedSettings(
  settings: Readonly<Record<string, string>>,
  session: SessionParams | undefined,
): [string, string][] {
  const sqlSettings = Object.entries(settings).filter(([name]) => SQL_VALUED.has(name));
  if (sqlSettings.length > 0 && session !== undefined) {
    throw QueryError.of("READONLY", `${sqlSettings[0]![0]} cannot be set on a named session here`);
  }
  return sqlSettings;
}

/**
 * The SQL of `additional_table_filters` and `additional_result_filter` put through the policy as the WHERE of a
 * query, each filter alone: what the engine will add to the query is what was checked. On a session that has
 * none of them set; other settings among `settings` are passed over.
 */
export async function checkFilters(
  session: Session,
  settings: readonly [string, string][],
  database: string,
): Promise<void> {
  const refuse = (name: string) => () => {
    throw QueryError.of("READONLY", `A filter of ${name} may not change settings`);
  };
  for (const [name, value] of settings.filter(([setting]) => SQL_VALUED.has(setting))) {
    const filters = name === "additional_result_filter" ? [value] : await mapValues(session, value);
    for (const filter of filters) {
      await inspect(session, {
        text: `SELECT 1 WHERE ${filter}`,
        params: {},
        access: "read",
        database,
        checkSetting: refuse(name),
        isQuerySetting: () => true,
      });
    }
  }
}

/** The values of a `Map(String, String)` in its text form, as the engine reads it. */
async function mapValues(session: Session, text: string): Promise<string[]> {
  const sql = `SELECT arrayJoin(mapValues(m)) FROM format(TSV, 'm Map(String, String)', ${literal(text)})`;
  return (await rows(session, sql)).map(([value]) => value!);
}
