import type { ClickHouseConfig } from "../config";
import { ClickHouse, chunkByBytes, literal, literalList, sessionsFrom } from "../storage";
import type { ForgetOutcome, Forgotten } from "../telemetry";
import { type Erasure, planErasure } from "./erasure-plan";
import { type Hashed, hashedIn } from "./hashed";
import { type Mutation, mutated } from "./mutations";

/**
 * Removing what `planErasure` found (docs/operations.md#forgetting-persons): their events, the sessions those were
 * in (those that other persons' events share are summed up again from those alone), their person rows, merges,
 * identity facts and links. Groups are nobody's and stay.
 *
 * Deletes are mutations (`ALTER TABLE … DELETE`): each rewrites the parts that hold a row of theirs, so the rows
 * are off the disk once it is done (a lightweight `DELETE FROM` only masks them until some merge rewrites the part,
 * which an old month's part may never see). The statements name no ID and no value: a mutation's text is kept
 * with the table (`system.mutations`, and a file beside the parts), so they select rows by person id, by partition,
 * and by digests of the IDs and session IDs (`hashedIn`); only reads, which nothing keeps, name them.
 *
 * It goes in two steps, so that a running service pauses its flushes for the first only:
 * - `startErasure` deletes the identity rows (persons, merges, facts, links): every flush reads them, so they must
 *   be gone before the next one. Then it registers the deletes of sessions and events, which need not: a mutation
 *   rewrites only the parts that existed when it was registered, never the rows a later flush inserts.
 * - `finishErasure` waits for those (the engine takes some 0.15 s for each part of the partitions they visit,
 *   beyond the first few, even where no row matches), then sums up again the shared sessions.
 *
 * A registered mutation is kept with its table and goes on after a restart. A forget that fails part-way is safe to
 * repeat: a second run finds what is left through the links, facts and events (`planErasure`).
 */

/** The erasure under way: its two mutations registered, the identity rows gone. */
export interface Pending {
  readonly erasure: Erasure;
  /** The mutations to wait for. */
  readonly mutations: readonly Mutation[];
  readonly started: number;
}

/**
 * Deletes the identity rows, then registers the deletes of sessions and events without waiting for them. The
 * identity tables' deletes are registered together and waited for together: the engine works through the parts
 * of several tables at once, and their rows must be gone before a flush reads them again. The events' and
 * sessions' go after them, so that the engine's work on those many parts does not hold the identity ones up.
 */
export async function startErasure(db: ClickHouse, erasure: Erasure, started = performance.now()): Promise<Pending> {
  const { ids, personIds, partitions, sessions, rows } = erasure;
  const register = async (table: string, predicates: readonly Hashed[], statement = deletion) => {
    const registered: Mutation[] = [];
    for (const { where, marker } of predicates) {
      // the engine's default: registered, not waited for (a query port that makes statements wait makes this wait)
      await db.command(statement(db, table, where));
      registered.push({ table, marker });
    }
    return registered;
  };
  const identity: Mutation[] = [];
  if (rows.persons > 0) identity.push(...(await register("persons", uuidsIn("id", personIds))));
  if (rows.person_overrides > 0) {
    identity.push(...(await register("person_overrides", uuidsIn("old_person_id", personIds))));
  }
  for (const table of ["identity_facts", "person_distinct_ids"] as const) {
    if (rows[table] > 0) identity.push(...(await register(table, await hashedIn(db, "distinct_id", ids))));
  }
  for (const mutation of identity) await mutated(db, mutation);
  const mutations: Mutation[] = [];
  if (rows.sessions > 0) mutations.push(...(await register("sessions", await hashedIn(db, "session_id", sessions))));
  if (rows.events > 0) {
    const inPartitions = (_: ClickHouse, table: string, where: string) =>
      `ALTER TABLE ${db.table(table)} ${partitions.map((id) => `DELETE IN PARTITION ID ${literal(id)} WHERE ${where}`).join(", ")}`;
    mutations.push(...(await register("events", uuidsIn("person_id", personIds), inPartitions)));
  }
  return { erasure, mutations, started };
}

/** Waits for the events and sessions to be deleted, then sums up the shared sessions again; says what was removed. */
export async function finishErasure(db: ClickHouse, { erasure, mutations, started }: Pending): Promise<Forgotten> {
  for (const mutation of mutations) await mutated(db, mutation);
  const sessionsRebuilt = await rebuildSessions(db, erasure.sessions);
  const seconds = Math.round((performance.now() - started) / 10) / 100;
  const { persons, ids, rows } = erasure;
  return { persons, distinctIds: ids.length, removed: rows, sessionsRebuilt, seconds };
}

/**
 * `ingest forget` in its own process: on a data directory no service holds, or on a server, over a connection of
 * its own. (Through a running service, `Storage.forget` does it between flushes.)
 */
export async function forgetDirectly(clickhouse: ClickHouseConfig, asked: readonly string[]): Promise<ForgetOutcome> {
  const started = performance.now();
  const db = await ClickHouse.connect(clickhouse);
  try {
    const erasure = await planErasure(db, asked);
    if ("unknown" in erasure) return erasure;
    return { forgotten: await finishErasure(db, await startErasure(db, erasure, started)) };
  } finally {
    await db.close();
  }
}

/** A mutation's statement: `ALTER TABLE … DELETE`. */
function deletion(db: ClickHouse, table: string, where: string): string {
  return `ALTER TABLE ${db.table(table)} DELETE WHERE ${where}`;
}

/**
 * Makes again the rows of `sessions` that other persons' events share, from those events alone (their rows were
 * deleted with the person's); returns how many. Events a flush added since are summed up again too, which changes
 * nothing: every column of a session is a set of uuids or a first or last value.
 */
async function rebuildSessions(db: ClickHouse, sessions: readonly string[]): Promise<number> {
  let rebuilt = 0;
  const events = db.table("events");
  for (const chunk of chunkByBytes(sessions)) {
    const list = literalList(chunk);
    const [row] = await db.rows<{ n: number | string }>(
      `SELECT uniqExact(session_id) AS n FROM ${events} WHERE session_id IN ${list}`,
    );
    const shared = Number(row?.n ?? 0);
    if (shared === 0) continue;
    await db.command(sessionsFrom(db.table("sessions"), events, `session_id IN ${list}`));
    rebuilt += shared;
  }
  return rebuilt;
}

/** `column IN (…)` over UUIDs, a chunk a predicate: person ids are digests of IDs already (UUIDv5), no data. */
function uuidsIn(column: string, uuids: readonly string[]): Hashed[] {
  return chunkByBytes(uuids).map((chunk) => ({ where: `${column} IN ${literalList(chunk)}`, marker: chunk[0]! }));
}
