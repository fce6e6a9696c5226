import { PendingBytes } from "../../src/capture";
import { loadConfig } from "../../src/config";
import type { CapturedEvent } from "../../src/contract";
import { handle } from "../../src/http";
import { MemorySink } from "./memory-sink";

/** Batch items as capture would hand them to a sink: validated and normalized, through the real request path. */
export async function captured(batch: readonly object[]): Promise<{ events: CapturedEvent[] }> {
  const sink = new MemorySink();
  const request = new Request("http://ingest.test/batch/", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ api_key: "k", batch }),
  });
  const config = loadConfig({ PUBLIC_API_KEYS: "k" });
  const response = await handle(request, { config, sink, pending: new PendingBytes(config.maxPendingBytes) });
  if (response.status !== 200) throw new Error(`capture refused the batch: ${await response.text()}`);
  return { events: sink.events };
}
