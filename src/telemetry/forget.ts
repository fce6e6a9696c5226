import { describeError, type Logger } from "./log";

/**
 * What `ingest forget` removed (docs/operations.md#forgetting-persons), as the service answers it, the command
 * prints it and the audit line keeps it. The types live here, below the write path that does it and the door that
 * asks for it, so that both speak of one thing.
 */

/** The tables a forget removes rows from: every one that holds a person's data (groups are nobody's). */
export const FORGOTTEN_TABLES = [
  "events",
  "sessions",
  "persons",
  "person_overrides",
  "identity_facts",
  "person_distinct_ids",
] as const;

export type ForgottenTable = (typeof FORGOTTEN_TABLES)[number];

/** What one forget did. */
export interface Forgotten {
  /** The persons: how many person ids had rows in `persons`, and how many distinct IDs they had in all. */
  readonly persons: number;
  readonly distinctIds: number;
  /** Stored rows removed from each table (every version and unmerged copy of a row counts). */
  readonly removed: Readonly<Record<ForgottenTable, number>>;
  /** Sessions that other persons' events shared, summed up again from those events alone. */
  readonly sessionsRebuilt: number;
  readonly seconds: number;
}

/** A forget's outcome: done, or refused, with nothing changed, because some IDs asked for have no person. */
export type ForgetOutcome = { readonly forgotten: Forgotten } | { readonly unknown: readonly string[] };

/** Erases the persons of some distinct IDs (the write path, or a direct connection). */
export type Forget = (distinctIds: readonly string[]) => Promise<ForgetOutcome>;

/** Where a forget ran: through the running service's admin door, or in the command's own process. */
export type ForgetVia = "service" | "directly";

/**
 * A distinct ID as the audit line keeps it: the first 16 hex digits of its SHA-256. The line holds no ID, yet
 * whoever has one can tell whether it was forgotten, and when.
 */
export function hashedId(distinctId: string): string {
  return `sha256:${new Bun.CryptoHasher("sha256").update(distinctId).digest("hex").slice(0, 16)}`;
}

/** The sentence for IDs no person has, naming them for the operator who typed them (never logged). */
export function unknownSentence(unknown: readonly string[]): string {
  const named = unknown.map((id) => JSON.stringify(id)).join(", ");
  return `No person or event has the distinct ID${unknown.length === 1 ? "" : "s"} ${named}: nothing was forgotten.`;
}

/** The one audit line of a forget: the IDs asked for, hashed, and what was removed; never an ID or a value. */
export function logForgotten(log: Logger, asked: readonly string[], forgotten: Forgotten, via: ForgetVia): void {
  log.info("persons forgotten", { ids: asked.map(hashedId), via, ...forgotten });
}

/** What the admin door tells the outside (the log): each forget, each refusal, each failure. */
export interface AdminObserver {
  forgotten(asked: readonly string[], forgotten: Forgotten): void;
  /** A request refused: its status and why, in words that name no ID (bad token, bad body, IDs no person has). */
  refused(status: number, reason: string): void;
  failed(error: unknown): void;
  /** A backup made through the door: its summary (paths, rows, bytes, seconds, the pause). */
  backedUp(summary: object): void;
  backupFailed(error: unknown): void;
}

/**
 * The admin door's log lines: the audit line of each forget, a refusal (a wrong token is a warning: someone on
 * this machine tried the door) without the IDs, a failure with its cause.
 */
export function adminObserver(log: Logger): AdminObserver {
  return {
    forgotten: (asked, forgotten) => logForgotten(log, asked, forgotten, "service"),
    refused(status, reason) {
      if (status === 401) log.warn("admin request refused", { status, reason });
      else log.info("admin request refused", { status, reason });
    },
    failed: (error) => log.error("forget failed: run it again to finish it", { cause: describeError(error) }),
    backedUp(summary) {
      const { tables: _tables, ...rest } = summary as { tables?: unknown };
      log.info("backup made", rest);
    },
    backupFailed: (error) => log.error("backup failed, and made no backup", { cause: describeError(error) }),
  };
}
