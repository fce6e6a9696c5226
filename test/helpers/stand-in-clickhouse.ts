import { MATERIALIZED_BY_DEFAULT, PERSON_MATERIALIZED_BY_DEFAULT } from "../../src/config";
import { schemaObjects } from "../../src/storage/schema";

/** One request the stand-in took: its statement (the query parameter, else the body) and its URL parameters. */
export interface Recorded {
  readonly statement: string;
  readonly params: URLSearchParams;
}

export interface StandInClickHouse {
  readonly url: string;
  readonly recorded: readonly Recorded[];
  stop(): Promise<void>;
}

export interface StandInOptions {
  readonly database?: string;
  /** The cluster `system.clusters` holds, and how many nodes it has. */
  readonly cluster?: { readonly name: string; readonly nodes: number };
  /** The tables `system.tables` lists, name → engine; none by default (a new database). */
  readonly tables?: Readonly<Record<string, string>>;
  /** The comments of views another version made, name → comment; else each view's is this version's. */
  readonly comments?: Readonly<Record<string, string>>;
  /** The partitions (`partition_id`) a read of `system.parts` by partition finds; none by default. */
  readonly partitions?: readonly string[];
  /** The exception a statement is refused with (`Code: …`, as a server words it); none refused by default. */
  readonly refuse?: (statement: string) => string | undefined;
}

/**
 * A stand-in ClickHouse server for what no real server can be run here for (a modern server does not install on
 * these machines, and a cluster needs several): it answers the schema check as a server holding this version's
 * schema would (the tables' columns, the default property and person property columns among them, and views' comments, the cluster's
 * nodes, the partitions it is given), every other read with no rows, refuses what it is told to, and records every
 * request.
 */
export function standInClickHouse(options: StandInOptions = {}): StandInClickHouse {
  const database = options.database ?? "default";
  const tables = options.tables ?? {};
  const objects = schemaObjects(database, options.cluster?.name, {
    materializedProperties: MATERIALIZED_BY_DEFAULT,
    materializedPersonProperties: PERSON_MATERIALIZED_BY_DEFAULT,
  });
  // a view's comment as this version makes it: the server holds this version's schema
  const comments = new Map(objects.map((object) => [object.name, object.definition ?? ""]));
  for (const [name, comment] of Object.entries(options.comments ?? {})) comments.set(name, comment);
  const columns = objects
    .flatMap((object) => [
      ...Object.entries(object.columns ?? {}).map(([name, type]) => ({ table: object.name, name, type })),
      ...Object.entries(object.materialized ?? {}).map(([name, { type, expression }]) => ({
        table: object.name,
        name,
        type,
        default_kind: "MATERIALIZED",
        default_expression: expression,
      })),
    ])
    .map((row) => JSON.stringify(row));
  const answer = (statement: string): string[] => {
    if (statement.includes("system.clusters")) return [JSON.stringify({ nodes: options.cluster?.nodes ?? 0 })];
    if (statement.includes("system.databases"))
      return Object.keys(tables).length > 0 ? [JSON.stringify({ name: database })] : [];
    if (statement.includes("system.tables"))
      return Object.entries(tables).map(([name, engine]) =>
        JSON.stringify({ name, engine, comment: comments.get(name) ?? "" }),
      );
    if (statement.includes("system.columns")) return columns;
    if (statement.includes("system.parts") && statement.includes("partition_id"))
      return (options.partitions ?? []).map((id) => JSON.stringify({ partition_id: id }));
    return [];
  };
  const recorded: Recorded[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const params = new URL(request.url).searchParams;
      const body = await request.text();
      const statement = (params.get("query") ?? body).trim();
      recorded.push({ statement, params });
      const refused = options.refuse?.(statement);
      if (refused !== undefined) return new Response(refused, { status: 500 });
      return new Response(
        answer(statement)
          .map((row) => `${row}\n`)
          .join(""),
        {
          headers: { "Content-Type": "application/x-ndjson", "X-ClickHouse-Format": "JSONEachRow" },
        },
      );
    },
  });
  return { url: server.url.href, recorded, stop: () => server.stop(true) };
}
