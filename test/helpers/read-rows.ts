// Prints the rows of one query (argv[2]) as JSON, against the database the environment names. Run as its own
// process by queryRows, after the service process that wrote the data has exited.
import { loadConfig } from "../../src/config";
import { ClickHouse } from "../../src/storage/clickhouse";

const db = await ClickHouse.connect(loadConfig(process.env).clickhouse);
try {
  const sql = process.argv[2]!.replaceAll("{db}", `\`${db.database}\``);
  console.log(JSON.stringify(await db.rows(sql)));
} finally {
  await db.close();
}
