import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { type Config, ConfigError, loadConfig, OperatorError } from "../config";
import { heldBy } from "../engine";
import { type ForgetOutcome, type ForgetVia, Logger, logForgotten, unknownSentence } from "../telemetry";
import { forgetDirectly } from "../write";
import { failure } from "./output";

const FORGET_USAGE = `Usage: ingest forget [--url URL] [--data-dir DIR] DISTINCT_ID...

Erases every trace of the persons these distinct IDs belong to: their events (under every ID of theirs, and
of the persons merged into them), the sessions those were in, their person rows, merges, identity facts and
links. Groups stay. A new event from one of the IDs afterwards makes a new person, with nothing of the old.

It asks a running service's admin door: --url, else ADMIN_URL, else http://127.0.0.1:$ADMIN_PORT, with
ADMIN_TOKEN. When no service answers there (or none is configured), it erases the data itself: in DATA_DIR
(or --data-dir), which works only while no service holds it, or on the server at CLICKHOUSE_URL.

What was removed is one JSON line on standard output; the audit line (the IDs hashed, never an ID or a value)
goes to the service's log, or, done here, to standard error. Exit status: 0 when forgotten; 1 when it failed
(run it again: it finishes what is left); 2 for a usage error, an ID no person has (then nothing is changed),
or a data directory a running service holds.
`;

/** Where the forget goes: an admin door, and whether it was asked for (then nothing else is tried). */
interface Door {
  readonly url: string;
  readonly explicit: boolean;
}

/** `ingest forget`: returns the exit status. */
export async function forgetCommand(args: readonly string[], env = process.env): Promise<number> {
  const parsed = readArgs(args);
  if (typeof parsed === "string") return usage(parsed);
  if (parsed.help) {
    process.stdout.write(FORGET_USAGE);
    return 0;
  }
  const { ids, url, dataDir } = parsed;
  if (ids.length === 0) return usage("no distinct ID given");
  if (ids.includes("")) return usage("a distinct ID cannot be empty");
  const explicit = url ?? env.ADMIN_URL;
  const door: Door | undefined = explicit
    ? { url: explicit, explicit: true }
    : env.ADMIN_PORT
      ? { url: `http://127.0.0.1:${env.ADMIN_PORT}`, explicit: false }
      : undefined;
  if (door !== undefined) {
    const answered = await throughDoor(door, ids, env.ADMIN_TOKEN ?? "");
    if (answered !== undefined) return answered;
  }
  return directly(ids, env, dataDir);
}

/** The IDs and options in `args`, or the sentence refusing them. */
function readArgs(args: readonly string[]) {
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: { url: { type: "string" }, "data-dir": { type: "string" }, help: { type: "boolean", short: "h" } },
    });
    return { ids: [...new Set(positionals)], url: values.url, dataDir: values["data-dir"], help: values.help };
  } catch (error) {
    // parseArgs explains at length; the option it names is what the operator needs
    const option = /'([^']+)'/.exec((error as Error).message)?.[1];
    return option === undefined ? (error as Error).message : `unknown or incomplete option "${option}"`;
  }
}

/**
 * Asks the service's admin door. Undefined when nothing answers at a door that was only assumed (ADMIN_PORT), so
 * that the data is tried instead.
 */
async function throughDoor(door: Door, ids: readonly string[], token: string): Promise<number | undefined> {
  if (token === "") return usage("ADMIN_TOKEN is not set: the admin door needs the service's token");
  let response: Response;
  try {
    response = await fetch(new URL("/admin/forget", door.url), {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ distinct_ids: ids }),
    });
  } catch (error) {
    if (!door.explicit) return undefined;
    return failure(`Cannot reach the admin door at ${door.url}: ${(error as Error).message}`);
  }
  const body = (await response.json().catch(() => ({}))) as { error?: string } & Record<string, unknown>;
  if (response.ok) return summary(ids, body, "service");
  const sentence = body.error ?? `The admin door answered ${response.status}.`;
  if (response.status === 401) return refuse(`The service at ${door.url} refused ADMIN_TOKEN.`);
  // refused with nothing changed: IDs no person has, or a request the door does not take
  const refused = response.status === 400 || (response.status === 404 && Array.isArray(body.unknown));
  return refused ? refuse(sentence) : failure(sentence);
}

/** Erases in this process: on the data directory (no service may hold it), or on the ClickHouse server. */
async function directly(ids: readonly string[], env: NodeJS.ProcessEnv, dataDir: string | undefined): Promise<number> {
  let config: Config;
  try {
    const { QUERY_PORT: _query, METRICS_PORT: _metrics, ADMIN_PORT: _admin, ...settings } = env; // it serves none
    config = loadConfig({ ...settings, ...(dataDir !== undefined && { DATA_DIR: dataDir }) });
  } catch (error) {
    if (error instanceof ConfigError) return refuse(error.message);
    throw error;
  }
  const { clickhouse } = config;
  if (clickhouse.kind === "embedded") {
    const dir = clickhouse.dataDir;
    if (!existsSync(dir)) return refuse(`No data in ${dir}: set DATA_DIR (or --data-dir) to the service's data.`);
    const held = heldBy(dir);
    if (held !== undefined) {
      return refuse(
        `${held}: forget through it instead: start it with ADMIN_PORT and ADMIN_TOKEN, and run this with the ` +
          "same ADMIN_PORT (or ADMIN_URL) and ADMIN_TOKEN.",
      );
    }
  }
  let outcome: ForgetOutcome;
  try {
    outcome = await forgetDirectly(clickhouse, ids);
  } catch (error) {
    if (error instanceof OperatorError) return refuse(error.message);
    return failure(`ingest forget failed part-way; run it again to finish it: ${(error as Error).message}`);
  }
  if ("unknown" in outcome) return refuse(unknownSentence(outcome.unknown));
  // the audit line, to this process's log: standard error, beside the summary on standard output
  logForgotten(
    new Logger(config.logLevel, (line) => process.stderr.write(`${line}\n`)),
    ids,
    outcome.forgotten,
    "directly",
  );
  return summary(ids, outcome.forgotten, "directly");
}

/** The summary line: how many IDs were asked for, what was removed, and where it ran. */
function summary(ids: readonly string[], forgotten: object, via: ForgetVia): number {
  const { status: _status, ...removed } = forgotten as { status?: unknown };
  process.stdout.write(`${JSON.stringify({ ids: ids.length, ...removed, via })}\n`);
  return 0;
}

/** A refusal before anything changed: one sentence on stderr, exit 2. */
function refuse(sentence: string): number {
  process.stderr.write(`ingest forget: ${sentence}\n`);
  return 2;
}

function usage(sentence: string): number {
  return refuse(`${sentence} (see ingest forget --help)`);
}
