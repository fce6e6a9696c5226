import type { FactRow, FirstOnce } from "../../src/identity/facts";
import type { OnceRequest } from "../../src/identity/gather";
import type { Link } from "../../src/identity/person";
import type { DistinctIdRow, OverrideRow, PersonRow } from "../../src/identity/rows";
import { earliestOnce } from "./onces";

/**
 * A replicated table store for a deterministic simulation of a cluster: what ClickHouse's replicated tables do
 * that the identity design leans on, and nothing else. An insert is a part; the replication log lists every part
 * some replica took; each replica holds some of them and fetches the rest while it is up; a quorum insert
 * succeeds once a majority holds the part, and may time out with the part on fewer (ClickHouse's
 * UNKNOWN_STATUS_OF_INSERT, the part kept). Reads see the parts the replica holds, collapsed as the engines do.
 */

export interface EventRow {
  readonly uuid: string;
  readonly distinct_id: string;
  readonly person_id: string;
}

export interface Tables {
  identity_facts: FactRow;
  persons: PersonRow;
  person_distinct_ids: DistinctIdRow;
  person_overrides: OverrideRow;
  events: EventRow;
}
export type TableName = keyof Tables;

export interface Part<T extends TableName = TableName> {
  readonly id: number;
  readonly table: T;
  readonly rows: readonly Tables[T][];
}

/** How a quorum insert ended: acknowledged; timed out with the part on the replicas it reached; refused. */
export type InsertOutcome = "acknowledged" | "timed out" | "refused";

/** A source of choices: the simulation's seeded random numbers. */
export interface Choices {
  next(): number;
  int(below: number): number;
}

export class ReplicatedStore {
  readonly log: Part[] = [];
  readonly held: Set<number>[];
  readonly up: boolean[];

  constructor(
    readonly replicas: number,
    private readonly choices: Choices,
  ) {
    this.held = Array.from({ length: replicas }, () => new Set<number>());
    this.up = Array.from({ length: replicas }, () => true);
  }

  get majority(): number {
    return Math.floor(this.replicas / 2) + 1;
  }

  /**
   * A quorum insert through `node`: refused (nothing written) when fewer than a majority are up; else the part
   * reaches the node and some others, and is acknowledged once a majority holds it, or times out (kept).
   */
  insert<T extends TableName>(node: number, table: T, rows: readonly Tables[T][]): InsertOutcome {
    if (rows.length === 0) return "acknowledged";
    const alive = this.up.flatMap((up, replica) => (up ? [replica] : []));
    if (!this.up[node] || alive.length < this.majority) return "refused";
    const part: Part<T> = { id: this.log.length, table, rows };
    this.log.push(part as Part);
    this.held[node]!.add(part.id);
    const others = alive.filter((replica) => replica !== node);
    if (this.choices.next() < 0.1) {
      // the quorum timed out: the part is on the node and maybe a few others, short of a majority
      for (const replica of others.slice(0, this.choices.int(this.majority - 1))) this.held[replica]!.add(part.id);
      return "timed out";
    }
    shuffle(others, this.choices);
    for (const replica of others.slice(0, this.majority - 1)) this.held[replica]!.add(part.id);
    return "acknowledged";
  }

  /** Replication at work: each replica that is up fetches some of the parts it lacks from one that is up. */
  replicate(): void {
    for (let replica = 0; replica < this.replicas; replica++) {
      if (!this.up[replica]) continue;
      for (const part of this.log) {
        if (!this.held[replica]!.has(part.id) && this.#fetchable(part.id) && this.choices.next() < 0.5) {
          this.held[replica]!.add(part.id);
        }
      }
    }
  }

  /**
   * `SYSTEM SYNC REPLICA … LIGHTWEIGHT`: the node fetches every part of the log as it stands; false (a timeout)
   * when a part is held only by replicas that are down.
   */
  catchUp(node: number): boolean {
    if (!this.up[node]) return false;
    for (const part of this.log) {
      if (this.held[node]!.has(part.id)) continue;
      if (!this.#fetchable(part.id)) return false;
      this.held[node]!.add(part.id);
    }
    return true;
  }

  /** Every replica up and holding every part: the cluster at rest. */
  settle(): void {
    this.up.fill(true);
    for (const held of this.held) for (const part of this.log) held.add(part.id);
  }

  #fetchable(part: number): boolean {
    return this.held.some((held, replica) => this.up[replica] && held.has(part));
  }

  /** The rows of `table` that `node` holds. */
  rows<T extends TableName>(node: number, table: T): Tables[T][] {
    const held = this.held[node]!;
    return this.log
      .filter((part) => part.table === table && held.has(part.id))
      .flatMap((part) => part.rows as Tables[T][]);
  }

  /** The current link of each distinct ID `node` holds (the highest version; links are never deleted here). */
  links(node: number): Map<string, Link> {
    const links = new Map<string, Link>();
    for (const row of this.rows(node, "person_distinct_ids")) {
      const held = links.get(row.distinct_id);
      if (held === undefined || held.version < row.version) {
        links.set(row.distinct_id, { personId: row.person_id, version: row.version });
      }
    }
    return links;
  }

  /** What `loadNeighbourhood` reads on `node`: the links of IDs ever on a person one of `ids` was ever on, and all their facts. */
  neighbourhood(node: number, ids: readonly string[]): { links: Map<string, Link>; facts: FactRow[] } {
    const linkRows = this.rows(node, "person_distinct_ids");
    const frontier = new Set(ids);
    const persons = new Set(linkRows.filter((row) => frontier.has(row.distinct_id)).map((row) => row.person_id));
    const sharing = new Set(linkRows.filter((row) => persons.has(row.person_id)).map((row) => row.distinct_id));
    const current = this.links(node);
    const links = new Map([...sharing].flatMap((id) => (current.has(id) ? [[id, current.get(id)!] as const] : [])));
    const facts = this.rows(node, "identity_facts").filter(
      (fact) => fact.kind !== "once" && (frontier.has(fact.distinct_id) || sharing.has(fact.distinct_id)),
    );
    return { links, facts };
  }

  /** What `loadOnces` reads on `node`. */
  onces(node: number, requests: readonly OnceRequest[]): (FirstOnce | undefined)[] {
    const facts = this.rows(node, "identity_facts");
    return requests.map((request) => earliestOnce(facts, request));
  }

  /** The highest version of each person, and whether that version is deleted. */
  persons(node: number): Map<string, PersonRow> {
    return latestBy(this.rows(node, "persons"), (row) => row.id);
  }

  /** The current override of each person merged away. */
  overrides(node: number): Map<string, OverrideRow> {
    return latestBy(this.rows(node, "person_overrides"), (row) => row.old_person_id);
  }
}

/** Each key's row of the highest version, as ReplacingMergeTree keeps it (the later of equal versions). */
function latestBy<T extends { readonly version: number }>(rows: readonly T[], key: (row: T) => string): Map<string, T> {
  const latest = new Map<string, T>();
  for (const row of rows) {
    const held = latest.get(key(row));
    if (held === undefined || held.version <= row.version) latest.set(key(row), row);
  }
  return latest;
}

function shuffle<T>(items: T[], choices: Choices): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = choices.int(i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}
