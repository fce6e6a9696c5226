import type { Config } from "../config";
import type { EventSink } from "../event";
import { checkApiKey, checkOrigin } from "./auth";
import { checkHeaders, decodeBody } from "./decode";
import { normalize } from "./normalize";
import type { PendingBytes } from "./pending";
import { timestampFromDate } from "./timestamp";
import { acceptEvents, parsePayload } from "./validate";

export interface CaptureResult {
  readonly ingested: number;
  readonly dropped: number;
}

/**
 * `POST /batch/`, in the order the checks run: cheap header checks first (compression parameter, content type,
 * content encoding, origin), then the body (size, gzip, JSON), the payload (shape, event count), the api_key,
 * and every event (timestamps fail the request, events without a name or distinct ID are dropped). Only then is
 * anything written; it resolves once the rows are in ClickHouse.
 */
export async function captureBatch(
  request: Request,
  url: URL,
  config: Config,
  sink: EventSink,
  pending: PendingBytes,
): Promise<CaptureResult> {
  const receivedAt = timestampFromDate(new Date());
  const encoding = checkHeaders(request, url);
  const origin = request.headers.get("origin");
  checkOrigin(origin, config.allowedOrigins);

  // The body's bytes count against MAX_PENDING_BYTES until the request is answered: its events stay in memory
  // until they are written.
  const claim = pending.claim();
  try {
    const body = await decodeBody(request, encoding, {
      maxBytes: config.maxBatchBytes,
      timeoutMs: config.requestTimeoutMs,
      claim: claim.growTo,
    });
    const payload = parsePayload(body, config.maxEventsPerBatch);
    checkApiKey(payload, origin, config.publicApiKeys);

    const { events, dropped } = acceptEvents(payload.batch);
    await sink.ingest(events.map((event) => normalize(event, receivedAt)));
    return { ingested: events.length, dropped };
  } finally {
    claim.release();
  }
}
