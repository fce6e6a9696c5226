import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/config";
import { SchemaError } from "../../src/storage";
import type { ClickHouse } from "../../src/storage/clickhouse";
import { KEEPER_PATHS, schemaObjects } from "../../src/storage/schema";
import { literal } from "../../src/storage/sql";
import { Storage, storageOptions } from "../../src/write";
import { captured } from "../helpers/captured";
import { openDb, uniqueDatabase } from "../helpers/service";
import { type StandInOptions, standInClickHouse } from "../helpers/stand-in-clickhouse";

// No ClickHouse cluster can run here (a modern server does not install on these machines, and a cluster needs
// several with Keeper): the DDL is checked by the engine's own parser, and what the service sends a cluster by a
// stand-in server that answers the schema check as a cluster's node would.

const CLUSTER = "two_nodes";
let engine: ClickHouse;

beforeAll(async () => {
  engine = await openDb(uniqueDatabase());
});
afterAll(() => engine.close());

/** A statement as the engine's parser reads it back, on one line. */
async function parsed(statement: string): Promise<string> {
  const [row] = await engine.rows<{ formatted: string }>(
    `SELECT formatQuerySingleLine(${literal(statement)}) AS formatted`,
  );
  return row?.formatted ?? "";
}

const engineOf = (formatted: string) => /ENGINE = (.*?)(?: PARTITION BY| ORDER BY|$)/.exec(formatted)?.[1];

describe("the cluster schema, read by the engine's own parser", () => {
  test("every table and the view are created ON CLUSTER, with the engines and Keeper paths the docs give", async () => {
    const shard = `'${KEEPER_PATHS.sharded}', '{replica}'`;
    const everywhere = `'${KEEPER_PATHS.everywhere}', '{replica}'`;
    const created = new Map<string, string>();
    for (const object of schemaObjects("analytics", CLUSTER)) created.set(object.name, await parsed(object.create));
    expect([...created.keys()]).toEqual([
      "events_local",
      "events",
      "persons",
      "person_distinct_ids",
      "identity_facts",
      "group_facts",
      "groups",
      "person_overrides",
      "person_squashes",
      "sessions_local",
      "sessions",
      "sessions_mv",
      "events_resolved",
    ]);
    for (const formatted of created.values()) expect(formatted).toContain(`ON CLUSTER ${CLUSTER}`);
    expect(Object.fromEntries([...created].map(([name, formatted]) => [name, engineOf(formatted)]))).toEqual({
      events_local: `ReplicatedReplacingMergeTree(${shard}, created_at)`,
      events: `Distributed('${CLUSTER}', 'analytics', 'events_local', cityHash64(distinct_id))`,
      persons: `ReplicatedReplacingMergeTree(${everywhere}, version)`,
      person_distinct_ids: `ReplicatedReplacingMergeTree(${everywhere}, version)`,
      identity_facts: `ReplicatedAggregatingMergeTree(${everywhere})`,
      group_facts: `ReplicatedAggregatingMergeTree(${everywhere})`,
      groups: `ReplicatedReplacingMergeTree(${everywhere}, version)`,
      person_overrides: `ReplicatedReplacingMergeTree(${everywhere}, version)`,
      person_squashes: `ReplicatedReplacingMergeTree(${everywhere})`,
      sessions_local: `ReplicatedAggregatingMergeTree(${shard})`,
      sessions: `Distributed('${CLUSTER}', 'analytics', 'sessions_local')`,
      sessions_mv: undefined,
      events_resolved: undefined,
    });
    // events are read from every shard, through the overrides every node holds
    expect(created.get("events_resolved")).toContain("FROM analytics.events AS e FINAL");
    expect(created.get("events_resolved")).toContain("FROM analytics.person_overrides");
    // each shard sums up the events inserted into it
    expect(created.get("sessions_mv")).toContain("TO analytics.sessions_local");
    expect(created.get("sessions_mv")).toContain("FROM analytics.events_local");
  });

  test("one server's schema is the same tables, plain, with nothing about a cluster", async () => {
    const objects = schemaObjects("analytics");
    expect(objects.map((object) => object.name)).toEqual([
      "events",
      "persons",
      "person_distinct_ids",
      "identity_facts",
      "group_facts",
      "groups",
      "person_overrides",
      "person_squashes",
      "sessions",
      "sessions_mv",
      "events_resolved",
    ]);
    for (const object of objects) {
      const formatted = await parsed(object.create);
      expect(formatted).not.toContain("ON CLUSTER");
      expect(formatted).not.toMatch(/Replicated|Distributed/);
    }
  });

  test("a cluster name that needs quoting stays one identifier", async () => {
    const [events] = schemaObjects("analytics", "eu-1.prod");
    expect(await parsed(events?.create ?? "")).toContain("ON CLUSTER `eu-1.prod`");
  });
});

/** Opens a storage on the stand-in as an instance with `CLICKHOUSE_CLUSTER` would, writes one identify, closes. */
async function openAndWrite(
  options: StandInOptions,
  env: Record<string, string> = {},
  batch: object[] = [
    { event: "$identify", distinct_id: "user-1", properties: { $anon_distinct_id: "anon-1", $set: { plan: "pro" } } },
  ],
) {
  const clickhouse = standInClickHouse(options);
  try {
    const config = loadConfig({ CLICKHOUSE_URL: clickhouse.url, ...env });
    const storage = await Storage.open(storageOptions(config));
    const { events } = await captured(batch);
    await storage.ingest(events);
    await storage.close();
    return clickhouse.recorded;
  } finally {
    await clickhouse.stop();
  }
}

const words = (statement: string, count: number) => statement.split(/\s+/).slice(0, count).join(" ");
const cluster = { name: CLUSTER, nodes: 2 };
const allTables = (cluster?: string) =>
  Object.fromEntries(schemaObjects("default", cluster).map((object) => [object.name, object.engine]));

describe("what an instance sends a cluster's node", () => {
  test("a new database: ON CLUSTER DDL; identity inserts on a majority quorum, read once the node caught up; events through to the shards", async () => {
    const recorded = await openAndWrite({ cluster }, { CLICKHOUSE_CLUSTER: CLUSTER });
    const ddl = recorded.filter((r) => /^(CREATE|ALTER|DROP)/.test(r.statement));
    expect(ddl.map((r) => words(r.statement, 3))).toEqual([
      "CREATE DATABASE IF",
      ...Array.from({ length: 11 }, () => "CREATE TABLE IF"),
      "CREATE OR REPLACE", // the sessions view
      "CREATE OR REPLACE", // events_resolved
    ]);
    for (const { statement } of ddl) expect(statement).toContain(`ON CLUSTER \`${CLUSTER}\``);

    const inserts = new Map(
      recorded
        .filter((r) => r.statement.startsWith("INSERT"))
        .map((r) => [words(r.statement, 3).replace("INSERT INTO `default`.", ""), r.params]),
    );
    expect([...inserts.keys()].sort()).toEqual(
      ["`events`", "`identity_facts`", "`person_distinct_ids`", "`persons`"].sort(),
    );
    for (const table of ["`identity_facts`", "`persons`", "`person_distinct_ids`"]) {
      expect(inserts.get(table)?.get("insert_quorum")).toBe("auto");
      expect(inserts.get(table)?.get("insert_quorum_parallel")).toBe("1");
      expect(inserts.get(table)?.get("insert_quorum_timeout")).toBe("5000");
    }
    // after its facts, the flush's node catches up with every identity table's log before it reads
    const statements = recorded.map((r) => r.statement);
    const factsWritten = statements.findIndex((s) => s.startsWith("INSERT INTO `default`.`identity_facts`"));
    const read = statements.findIndex((s, i) => i > factsWritten && s.startsWith("WITH"));
    expect(
      statements
        .slice(factsWritten + 1, read)
        .filter((s) => s.startsWith("SYSTEM"))
        .sort(),
    ).toEqual(
      ["identity_facts", "person_distinct_ids", "person_overrides", "persons"].map(
        (table) => `SYSTEM SYNC REPLICA \`default\`.\`${table}\` LIGHTWEIGHT`,
      ),
    );
    expect(inserts.get("`events`")?.get("distributed_foreground_insert")).toBe("1");
    expect(inserts.get("`events`")?.get("insert_quorum")).toBeNull();
  });

  test("a $groupidentify: its facts and its group on a majority quorum, the facts read once the node caught up", async () => {
    const batch = [
      {
        event: "$groupidentify",
        distinct_id: "$company_acme",
        properties: { $group_type: "company", $group_key: "acme" },
      },
    ];
    const recorded = await openAndWrite({ cluster }, { CLICKHOUSE_CLUSTER: CLUSTER }, batch);
    const statements = recorded.map((r) => r.statement);
    const factsWritten = statements.findIndex((s) => s.startsWith("INSERT INTO `default`.`group_facts`"));
    expect(recorded[factsWritten]?.params.get("insert_quorum")).toBe("auto");
    const caughtUp = statements.indexOf("SYSTEM SYNC REPLICA `default`.`group_facts` LIGHTWEIGHT");
    const read = statements.findIndex((s) => s.includes("FROM `default`.`group_facts`"));
    expect(factsWritten).toBeGreaterThan(-1);
    expect(caughtUp).toBeGreaterThan(factsWritten);
    expect(read).toBeGreaterThan(caughtUp);
  });

  test("a database that holds the schema already gets no DDL, so an instance starts while a node is down", async () => {
    const recorded = await openAndWrite({ cluster, tables: allTables(CLUSTER) }, { CLICKHOUSE_CLUSTER: CLUSTER });
    expect(recorded.filter((r) => /^(CREATE|ALTER)/.test(r.statement))).toEqual([]);
    expect(recorded.some((r) => r.statement.startsWith("INSERT INTO `default`.`events`"))).toBe(true);
  });

  test("views another version made (another comment, the same columns) are made again ON CLUSTER, and nothing else", async () => {
    const comments = { events_resolved: "", sessions_mv: "definition sha256:0000000000000000" };
    const recorded = await openAndWrite(
      { cluster, tables: allTables(CLUSTER), comments },
      { CLICKHOUSE_CLUSTER: CLUSTER },
    );
    const ddl = recorded.filter((r) => /^(CREATE|ALTER|DROP)/.test(r.statement)).map((r) => r.statement);
    expect(ddl.map((statement) => words(statement, 5))).toEqual([
      "CREATE OR REPLACE MATERIALIZED VIEW",
      "CREATE OR REPLACE VIEW `default`.`events_resolved`",
    ]);
    for (const statement of ddl) expect(statement).toContain(`ON CLUSTER \`${CLUSTER}\``);
  });

  test("the quorum is a majority whatever the cluster's size, so a minority of nodes down stops nothing", async () => {
    for (const nodes of [1, 3, 5]) {
      const recorded = await openAndWrite({ cluster: { name: CLUSTER, nodes } }, { CLICKHOUSE_CLUSTER: CLUSTER });
      const quorums = recorded
        .filter((r) => r.statement.startsWith("INSERT"))
        .map((r) => r.params.get("insert_quorum"));
      expect(new Set(quorums)).toEqual(new Set(["auto", null])); // null: events, through to the shards
    }
  });

  test("one server (no CLICKHOUSE_CLUSTER) sends no cluster DDL and no cluster settings", async () => {
    const recorded = await openAndWrite({});
    expect(recorded.some((r) => r.statement.includes("ON CLUSTER") || r.params.has("insert_quorum"))).toBe(false);
    expect(recorded.filter((r) => r.statement.startsWith("CREATE TABLE"))).toHaveLength(9);
  });

  const enginesAs = (prefix: string) =>
    Object.fromEntries(
      Object.entries(allTables()).map(([name, kind]) => [name, kind.replace(/^(\w*MergeTree)$/, `${prefix}$1`)]),
    );

  test("ClickHouse Cloud's shared engines do for one server: no quorum, and reads that see every acknowledged write", async () => {
    const recorded = await openAndWrite({ tables: enginesAs("Shared") });
    expect(recorded.some((r) => r.statement.startsWith("INSERT INTO `default`.`events`"))).toBe(true);
    expect(recorded.some((r) => r.params.has("insert_quorum") || r.statement.startsWith("SYSTEM"))).toBe(false);
    const reads = recorded.filter((r) => r.statement.startsWith("SELECT") || r.statement.startsWith("WITH"));
    const afterStart = reads.slice(reads.findIndex((r) => r.statement.startsWith("WITH")));
    for (const { params } of afterStart) expect(params.get("select_sequential_consistency")).toBe("1");
  });

  test("a Replicated database's engines do for one server: identity inserts on a majority, read once caught up", async () => {
    const recorded = await openAndWrite({ tables: enginesAs("Replicated") });
    const facts = recorded.find((r) => r.statement.startsWith("INSERT INTO `default`.`identity_facts`"));
    expect(facts?.params.get("insert_quorum")).toBe("auto");
    expect(
      recorded.find((r) => r.statement.startsWith("INSERT INTO `default`.`events`"))?.params.get("insert_quorum"),
    ).toBeNull();
    expect(recorded.filter((r) => r.statement.startsWith("SYSTEM SYNC REPLICA")).length).toBe(4);
  });
});

describe("a database made for the other layout, or a cluster the server does not know, is refused before any DDL", () => {
  /** Why the storage would not open, after checking that it sent no DDL first: a refused database is left as it was. */
  const refusal = async (options: StandInOptions, env: Record<string, string> = {}) => {
    const clickhouse = standInClickHouse(options);
    try {
      const config = loadConfig({ CLICKHOUSE_URL: clickhouse.url, ...env });
      const error = await Storage.open(storageOptions(config)).then(
        async (storage) => storage.close(),
        (caught: unknown) => caught,
      );
      expect(clickhouse.recorded.map((r) => r.statement).filter((s) => /^(CREATE|ALTER|DROP)\b/i.test(s))).toEqual([]);
      return error;
    } finally {
      await clickhouse.stop();
    }
  };

  test("a one-server database under CLICKHOUSE_CLUSTER is refused: its tables would hold one node's rows", async () => {
    const error = await refusal({ cluster, tables: allTables() }, { CLICKHOUSE_CLUSTER: CLUSTER });
    expect(error).toBeInstanceOf(SchemaError);
    expect(String(error)).toContain(
      `Table \`default\`.\`events\` is a ReplacingMergeTree, but on cluster ${CLUSTER} this service writes a Distributed there`,
    );
    expect(String(error)).toContain("made without CLICKHOUSE_CLUSTER");
  });

  test("a cluster's database without CLICKHOUSE_CLUSTER is refused: its inserts would skip the quorum", async () => {
    const error = await refusal({ tables: allTables(CLUSTER) });
    expect(error).toBeInstanceOf(SchemaError);
    expect(String(error)).toContain("is a Distributed, but on one server this service writes a ReplacingMergeTree");
  });

  test("a cluster the server does not define is named in the refusal", async () => {
    const error = await refusal({}, { CLICKHOUSE_CLUSTER: "nowhere" });
    expect(error).toBeInstanceOf(SchemaError);
    expect(String(error)).toContain("CLICKHOUSE_CLUSTER is nowhere, but the server defines no such cluster");
  });
});
