import type { Session } from "chdb";

/** The port's own statements on a session (set-up, checks, its catalogue), apart from the client's. */

/** Runs statements whose output the port has no use for. */
export async function execute(session: Session, sql: string): Promise<void> {
  await session.queryAsync(sql, { format: "TSVRaw" });
}

/** A query's rows, each an array of its values. */
export async function rows(session: Session, sql: string): Promise<string[][]> {
  const text = (await session.queryAsync(sql, { format: "JSONCompactEachRow" })).text().trim();
  return text === "" ? [] : text.split("\n").map((line) => JSON.parse(line) as string[]);
}
