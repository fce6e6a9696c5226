import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { type Config, ConfigError, loadConfig } from "../config";
import { heldBy, incompleteRestore } from "../engine";
import { QueryEngine, QueryError, queryEngineOptions } from "../query";
import { failure, usageError } from "./output";

const QUERY_USAGE = `Usage: ingest query [--format FORMAT] [--database NAME] [--url URL] "SQL"

Runs one query and prints its result: a table on a terminal, TabSeparated otherwise (or --format).
The SQL may also come on standard input. It asks a running service's query port: --url, else QUERY_URL,
else http://127.0.0.1:$QUERY_PORT, with QUERY_USER and QUERY_PASSWORD. When no service answers there
(or none is configured), it opens DATA_DIR itself, read-only, which works only while no service holds it.
`;

/** Where the query goes: a query port, and whether it was asked for (then nothing else is tried). */
interface Target {
  readonly url: string;
  readonly explicit: boolean;
}

/** `ingest query`: one query, its result on stdout, its error on stderr. Returns the exit code. */
export async function queryCommand(args: readonly string[], env = process.env): Promise<number> {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(args);
  } catch (error) {
    return usageError((error as Error).message, QUERY_USAGE);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(QUERY_USAGE);
    return 0;
  }
  const sql = positionals.length > 0 ? positionals.join(" ") : await Bun.stdin.text();
  if (sql.trim() === "") return usageError("No query given.", QUERY_USAGE);
  const format = values.format ?? (process.stdout.isTTY ? "PrettyCompactMonoBlock" : "TabSeparated");
  const explicit = values.url ?? env.QUERY_URL;
  const target: Target | undefined = explicit
    ? { url: explicit, explicit: true }
    : env.QUERY_PORT
      ? { url: `http://127.0.0.1:${env.QUERY_PORT}`, explicit: false }
      : undefined;
  const query = { sql, format, database: values.database };
  if (target !== undefined) {
    const answered = await overHttp(target, query, env);
    if (answered !== undefined) return answered;
  }
  return directly(query, env);
}

function parseOptions(args: readonly string[]) {
  return parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      format: { type: "string" },
      database: { type: "string" },
      url: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

interface Query {
  readonly sql: string;
  readonly format: string;
  readonly database: string | undefined;
}

/** Asks the query port. Undefined when no service answers at a port that was only assumed, to try the data. */
async function overHttp(target: Target, query: Query, env: NodeJS.ProcessEnv): Promise<number | undefined> {
  const url = new URL(target.url);
  url.searchParams.set("default_format", query.format);
  if (query.database !== undefined) url.searchParams.set("database", query.database);
  const user = decodeURIComponent(url.username) || env.QUERY_USER || "default";
  const password = decodeURIComponent(url.password) || env.QUERY_PASSWORD || "";
  url.username = "";
  url.password = "";
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      body: query.sql,
      headers: { authorization: `Basic ${btoa(`${user}:${password}`)}` },
    });
  } catch (error) {
    if (!target.explicit) return undefined;
    return failure(`Cannot reach the query port at ${target.url}: ${(error as Error).message}`);
  }
  if (!response.ok) return failure((await response.text()).trimEnd());
  for await (const chunk of response.body ?? []) await write(chunk);
  return 0;
}

/** Opens the data directory and runs the query on it, read-only, as the port would. */
async function directly(query: Query, env: NodeJS.ProcessEnv): Promise<number> {
  let config: Config;
  try {
    const { QUERY_PORT: _port, ...settings } = env; // this process serves no port
    config = loadConfig(settings);
  } catch (error) {
    if (error instanceof ConfigError) return failure(error.message);
    throw error;
  }
  if (config.clickhouse.kind !== "embedded") {
    return failure("With CLICKHOUSE_URL the data is on the server: query it with its own client, or --url.");
  }
  const dataDir = config.clickhouse.dataDir;
  if (!existsSync(dataDir)) return failure(`No data in ${dataDir}: set DATA_DIR to the service's data directory.`);
  const held = heldBy(dataDir);
  if (held !== undefined) {
    return failure(
      `${held}. Query it through its query port: start it with QUERY_PORT and QUERY_PASSWORD, and run this ` +
        "with the same QUERY_PORT (or QUERY_URL) and QUERY_PASSWORD.",
    );
  }
  const incomplete = incompleteRestore(dataDir);
  if (incomplete !== undefined) return failure(incomplete);
  const engine = await QueryEngine.open({ ...queryEngineOptions(config), concurrency: 1 });
  try {
    const running = await engine.run({
      query: query.sql,
      body: new Uint8Array(0),
      access: "read",
      database: query.database,
      defaultFormat: query.format,
      params: {},
      settings: {},
      session: undefined,
    });
    for await (const chunk of running.chunks()) await write(chunk);
    return 0;
  } catch (error) {
    if (error instanceof QueryError) return failure(error.text);
    throw error;
  } finally {
    await engine.close();
  }
}

/** Writes to stdout, waiting while its buffer is full, so a large result streams in bounded memory. */
function write(chunk: Uint8Array): Promise<void> | undefined {
  if (process.stdout.write(chunk)) return undefined;
  return new Promise((resolve) => process.stdout.once("drain", () => resolve()));
}
