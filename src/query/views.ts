import type { Session } from "chdb";
import { QUERY_LOG_TABLE } from "./log";
import { QUERY_PRIORITY } from "./settings";
import { identifierName, tokens } from "./tokens";

/**
 * The port's own tables over system tables: what a port user sees of the process in their place. A query that
 * names `system.<table>` reads the port's table for it instead, where there is one.
 */

/** The database of the port's own views over system tables (a Memory database: made anew at each start). */
const PORT_VIEWS_DATABASE = "_query_port";

/**
 * The port's own tables, by the system table each stands for, read in its place. `system.processes` shows every
 * query in the process: through the view a port user sees the port's queries only (the write path runs at another
 * priority), and the text of its own query only, since other clients' texts carry their bound parameter values.
 * `system.query_log`, which the engine does not keep, is the port's own log (log.ts). The catalogue tables are read
 * without the paths of the data directory.
 */
const PORT_TABLES: Readonly<Record<string, string>> = {
  processes: `CREATE OR REPLACE VIEW {database}.processes AS SELECT * REPLACE (if(query_id = queryID(), query, '') AS query) FROM system.processes WHERE Settings['priority'] = '${QUERY_PRIORITY}'`,
  query_log: QUERY_LOG_TABLE,
  // the catalogue without the paths of the data directory's files
  tables:
    "CREATE OR REPLACE VIEW {database}.tables AS SELECT * REPLACE ([] AS data_paths, '' AS metadata_path) FROM system.tables",
  databases: `CREATE OR REPLACE VIEW {database}.databases AS SELECT * REPLACE ('' AS data_path, '' AS metadata_path) FROM system.databases`,
  parts: "CREATE OR REPLACE VIEW {database}.parts AS SELECT * REPLACE ('' AS path) FROM system.parts",
  parts_columns:
    "CREATE OR REPLACE VIEW {database}.parts_columns AS SELECT * REPLACE ('' AS path) FROM system.parts_columns",
  projection_parts:
    "CREATE OR REPLACE VIEW {database}.projection_parts AS SELECT * REPLACE ('' AS path) FROM system.projection_parts",
  merges:
    "CREATE OR REPLACE VIEW {database}.merges AS SELECT * REPLACE ([] AS source_part_paths, '' AS result_part_path) FROM system.merges",
};

/** Creates the port's tables (at each start: a Memory database keeps nothing across restarts). */
export async function createPortTables(session: Session): Promise<void> {
  await session.queryAsync(`CREATE DATABASE IF NOT EXISTS ${PORT_VIEWS_DATABASE} ENGINE = Memory`);
  for (const create of Object.values(PORT_TABLES)) {
    await session.queryAsync(create.replace("{database}", PORT_VIEWS_DATABASE));
  }
}

/** The port's query log table, by its full name. */
export const QUERY_LOG = `${PORT_VIEWS_DATABASE}.query_log`;

/** `system.<table>` read through the port's own table for it, where it has one. */
export function throughPortViews(text: string): string {
  const parts = [...tokens(text)];
  return parts
    .map((token, index) => {
      const table = parts[index + 2];
      return identifierName(token) === "system" &&
        parts[index + 1]?.text === "." &&
        table !== undefined &&
        Object.hasOwn(PORT_TABLES, identifierName(table)!) &&
        parts[index - 1]?.text !== "."
        ? PORT_VIEWS_DATABASE
        : token.text;
    })
    .join("");
}
