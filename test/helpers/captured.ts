import { captureBatch } from "../../src/capture";
import { PendingBytes } from "../../src/capture/pending";
import { loadConfig } from "../../src/config";
import type { CapturedEvent } from "../../src/event";
import { MemorySink } from "./memory-sink";

/** Batch items as capture would hand them to a sink: validated and normalized, through the real capture path. */
export async function captured(batch: readonly object[]): Promise<{ events: CapturedEvent[] }> {
  const sink = new MemorySink();
  const request = new Request("http://ingest.test/batch/", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ api_key: "k", batch }),
  });
  const config = loadConfig({ PUBLIC_API_KEYS: "k" });
  await captureBatch(request, new URL(request.url), config, sink, new PendingBytes(config.maxPendingBytes));
  return { events: sink.events };
}
