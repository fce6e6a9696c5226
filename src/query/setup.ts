import type { Session } from "chdb";
import type { SessionConstructor } from "../engine";
import { literal, quoteIdentifier } from "../storage";
import { execute } from "./calls";
import { QueryError } from "./errors";
import type { QueryEngineOptions } from "./options";
import type { SessionParams } from "./params";
import { NamedSession, NamedSessions } from "./sessions";
import { limitSettings, SQL_VALUED } from "./settings";

/**
 * A query's session and what it is set to. Every query runs on a session of its own (a named one for
 * `session_id`), never the write path's: chDB runs one query at a time per session, and sessions on one data
 * directory run in parallel, so a query never holds up a flush. A session starts with the port's limits and the
 * client's settings, then `readonly = 1` (unless writes are allowed), after which the engine itself refuses every
 * change of them. See docs/query.md#how-a-query-runs.
 */

/** A client's settings, by name. */
type Settings = Readonly<Record<string, string>>;

/** Steps that free what a query holds; they run last first when the query ends. */
export type Releases = (() => void)[];

/** A session to run a query on, and its set-up, which must be done before the query. */
interface QuerySession {
  readonly session: Session;
  readonly setup: Promise<void>;
}

/** Opens a query's session, or finds the named one it asks for. */
export class QuerySessions {
  readonly #named = new NamedSessions();

  constructor(
    private readonly Session: SessionConstructor,
    private readonly options: QueryEngineOptions,
  ) {}

  /**
   * The session a query runs on: a named one for `params`, otherwise one of its own; what frees it is pushed on
   * `releases`. A session of its own becomes read-only only once the statement is checked (`finishSetup`), so
   * that the settings of its SETTINGS clause (checked as URL settings are) can be set first; a named one is
   * read-only from its start.
   */
  open(params: SessionParams | undefined, settings: Settings, readonly: boolean, releases: Releases): QuerySession {
    return params ? this.#namedSession(params, settings, readonly, releases) : this.#freshSession(settings, releases);
  }

  /** Closes the named sessions (queries still running close theirs when they end). */
  closeAll(): void {
    this.#named.closeAll();
  }

  /** A session for one query, with the limits and the client's settings. */
  #freshSession(settings: Settings, releases: Releases): QuerySession {
    const session = new this.Session(this.options.dataDir);
    releases.push(() => session.close());
    return { session, setup: execute(session, sessionSetup(this.options, settings, false)) };
  }

  /**
   * The session a `session_id` names, kept between its requests for its timeout, one request at a time. It keeps
   * the settings it was made with; a request with other settings is refused, since they could not be changed on
   * a read-only session anyway.
   */
  #namedSession(params: SessionParams, settings: Settings, readonly: boolean, releases: Releases): QuerySession {
    if (params.id.length === 0 || params.id.length > 256) throw QueryError.of("BAD_ARGUMENTS", "Invalid session_id");
    const key = JSON.stringify({ settings, readonly });
    let named = this.#named.get(params.id);
    if (named === undefined) {
      if (params.check) throw QueryError.of("SESSION_NOT_FOUND", `Session ${params.id} not found`);
      named = this.#named.add(params.id, (forget) => {
        const session = new this.Session(this.options.dataDir);
        const setup = execute(session, sessionSetup(this.options, settings, readonly));
        return new NamedSession(session, key, setup, forget);
      });
    } else if (named.busy) {
      throw QueryError.of("SESSION_IS_LOCKED", `Session ${params.id} is locked by a concurrent client`);
    } else if (named.key !== key) {
      throw QueryError.of("READONLY", `Session ${params.id} keeps the settings it was opened with`);
    }
    const held = named;
    held.busy = true;
    held.setup.catch(() => held.expire()); // a session that could not be set up is not kept
    releases.push(() => held.done(params.close ? 0 : params.timeoutS));
    return { session: held.session, setup: held.setup };
  }
}

/**
 * What a query's session is set to before its first query: the limits and the client's settings, the service's
 * database as the current one, then `readonly`.
 */
function sessionSetup(options: QueryEngineOptions, settings: Settings, readonly: boolean): string {
  // readonly comes last; SQL-valued settings only once checked, just before the statement runs (finishSetup)
  const chosen = Object.entries(settings).filter(([name]) => name !== "readonly" && !SQL_VALUED.has(name));
  const assignments = [...Object.entries(limitSettings(options)), ...chosen].map(
    ([name, value]) => `${name} = ${typeof value === "number" ? value : literal(value)}`,
  );
  const use = `USE ${quoteIdentifier(options.database)}`;
  return `SET ${assignments.join(", ")}; ${use}${readonly ? "; SET readonly = 1" : ""}`;
}

/**
 * The rest of a query's own session's set-up, once its statement is checked, just before it runs: the settings
 * of its SETTINGS clause and the SQL-valued ones (`settings`, checked), then `readonly = 1` where it must be.
 */
export async function finishSetup(
  session: Session,
  settings: readonly [string, string][],
  readonly: boolean,
): Promise<void> {
  const finish = settings.map(([name, value]) => `SET ${name} = ${literal(value)}`);
  if (readonly) finish.push("SET readonly = 1");
  if (finish.length > 0) await execute(session, finish.join("; "));
}
