import { type Config, ConfigError, loadConfig } from "./config";
import { serve } from "./server";
import { SchemaError, Storage } from "./storage";

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    process.exit(2);
  }
}

const config = configOrExit();
const storage = await Storage.open(config.clickhouse).catch((error: unknown) => {
  if (error instanceof SchemaError) console.error(error.message);
  else console.error("Cannot open ClickHouse:", error);
  process.exit(1);
});
const server = serve({ config, sink: storage });
const where =
  config.clickhouse.kind === "server" ? config.clickhouse.url : `embedded chDB at ${config.clickhouse.dataDir}`;
console.log(`Listening on ${server.url.href} (ClickHouse: ${where}, database ${config.clickhouse.database})`);

// Stop taking requests, let the ones in flight finish (their rows are written before they are answered), then
// close the database.
let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: shutting down`);
  await server.stop();
  await storage.close();
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
