import { ingestAccepted } from "../capture";
import type { Config } from "../config";
import { heldBy, incompleteRestore } from "../engine";
import { Storage, storageOptions } from "../write";
import { ImportError } from "./errors";
import type { ImportEvent } from "./events";

/** Where imported events go: a running service over HTTP, or the storage in this process. */
export interface ImportTarget {
  /** Settles once the events are stored; how many the target dropped, and how many times it retried. */
  send(events: readonly ImportEvent[]): Promise<{ dropped: number; retries: number }>;
  close(): Promise<void>;
}

/**
 * The storage in this process, on the configuration's ClickHouse (the data directory, or a server): events go
 * through the same normalization, identity resolution and inserts as the API's, with no HTTP in between.
 */
export async function directTarget(config: Config): Promise<ImportTarget> {
  const held = config.clickhouse.kind === "embedded" ? heldBy(config.clickhouse.dataDir) : undefined;
  if (held !== undefined) throw new ImportError(`${held}: import through it with --url, or stop it first.`);
  const incomplete = config.clickhouse.kind === "embedded" ? incompleteRestore(config.clickhouse.dataDir) : undefined;
  if (incomplete !== undefined) throw new ImportError(incomplete);
  const storage = await Storage.open(storageOptions(config));
  return {
    async send(events) {
      await ingestAccepted(
        events.map((event) => event.accepted),
        storage,
      );
      return { dropped: 0, retries: 0 };
    },
    close: () => storage.close(),
  };
}

/** Most attempts at one batch before the import stops; with the backoff, about two minutes of retrying. */
const MAX_ATTEMPTS = 10;
const BACKOFF_MS = { first: 250, max: 30_000 } as const;

/**
 * A running service's `/batch/`, in gzip bodies marked `historical_migration`, each under `maxBodyBytes` of JSON
 * (the service's `MAX_BATCH_BYTES`): a batch whose JSON is larger, as a vendor's events can be once mapped, goes in
 * halves. A 5xx, a 429 or a connection failure is retried with exponential backoff, or after the `Retry-After` the
 * service sent; any other refusal stops the import (every event was already checked as the service checks them,
 * so it means a limit or key the service has and the import does not know).
 */
export function httpTarget(url: string, apiKey: string, maxBodyBytes: number): ImportTarget {
  const endpoint = new URL("/batch/", url);
  const send = async (events: readonly ImportEvent[]): Promise<{ dropped: number; retries: number }> => {
    const json = JSON.stringify({ api_key: apiKey, historical_migration: true, batch: events.map((e) => e.item) });
    if (events.length > 1 && Buffer.byteLength(json) > maxBodyBytes) {
      const half = Math.ceil(events.length / 2);
      const [first, second] = [await send(events.slice(0, half)), await send(events.slice(half))];
      return { dropped: first.dropped + second.dropped, retries: first.retries + second.retries };
    }
    return post(endpoint, Bun.gzipSync(json), url);
  };
  return { send, close: async () => {} };
}

/** Posts one gzip body, retrying what a retry can fix. */
async function post(endpoint: URL, body: Uint8Array, url: string): Promise<{ dropped: number; retries: number }> {
  for (let attempt = 1; ; attempt++) {
    let response: Response | undefined;
    let failure: string;
    try {
      response = await fetch(endpoint, {
        method: "POST",
        body,
        headers: { "Content-Type": "application/json", "Content-Encoding": "gzip" },
      });
      if (response.ok) {
        const answer = (await response.json()) as { dropped?: number };
        return { dropped: answer.dropped ?? 0, retries: attempt - 1 };
      }
      failure = `${response.status} ${(await response.text()).slice(0, 500)}`;
      if (response.status < 500 && response.status !== 429) {
        throw new ImportError(`The service at ${url} refused a batch: ${failure}`);
      }
    } catch (error) {
      if (error instanceof ImportError) throw error;
      failure = (error as Error).message;
    }
    if (attempt >= MAX_ATTEMPTS) {
      throw new ImportError(`The service at ${url} failed a batch ${attempt} times; the last: ${failure}`);
    }
    await Bun.sleep(retryDelay(attempt, response?.headers.get("retry-after")));
  }
}

/** The service's `Retry-After` (seconds), else exponential backoff with jitter. */
function retryDelay(attempt: number, retryAfter: string | null | undefined): number {
  const seconds = Number(retryAfter);
  if (retryAfter && Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, BACKOFF_MS.max);
  const backoff = Math.min(BACKOFF_MS.first * 2 ** (attempt - 1), BACKOFF_MS.max);
  return backoff / 2 + Math.random() * (backoff / 2);
}
