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

// Stop taking connections and let requests in flight finish (their rows are written before they are answered).
// Past SHUTDOWN_TIMEOUT_MS the remaining connections are closed: those clients get no answer and retry, which
// stores nothing twice. Then every write already accepted is finished, and the database closed.
let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: shutting down`);
  const drained = await Promise.race([
    server.stop().then(() => true),
    Bun.sleep(config.shutdownTimeoutMs).then(() => false),
  ]);
  if (!drained) {
    console.log(`Shutdown: requests still running after ${config.shutdownTimeoutMs} ms; closing their connections`);
    await server.stop(true);
  }
  await storage.close();
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
