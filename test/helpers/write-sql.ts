// Runs each statement (argv[2…]) against the database the environment names, in order, from a process of its own
// (chDB binds a directory per process): writes into a stopped service's data directory, as runStatements asks.
import { loadConfig } from "../../src/config";
import { ClickHouse } from "../../src/storage/clickhouse";

const db = await ClickHouse.connect(loadConfig(process.env).clickhouse);
try {
  for (const sql of process.argv.slice(2)) await db.command(sql.replaceAll("{db}", `\`${db.database}\``));
} finally {
  await db.close();
}
