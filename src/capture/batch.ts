import type { Config } from "../config";
import type { CaptureResult, EventSink, Timestamp } from "../contract";
import { checkApiKey, checkOrigin } from "./auth";
import { type ContentEncoding, checkHeaders, parseBody } from "./decode";
import type { GeoIp } from "./geoip";
import { clientIp } from "./ip";
import { type BatchContext, normalize } from "./normalize";
import { timestampFromDate } from "./timestamp";
import { type AcceptedEvent, acceptEvents, parsePayload, sentAtOf } from "./validate";

/** What a `/batch/` request's head says, once it passed the checks that need no body. */
export interface BatchHead {
  readonly encoding: ContentEncoding;
  /** The browser's `Origin`, allowed; null for a backend. */
  readonly origin: string | null;
  /** When the request arrived: the time of events sent without one. */
  readonly receivedAt: Timestamp;
  /** The client's address (`clientIp`), unless `CAPTURE_IP=0`. */
  readonly ip: string | undefined;
}

/**
 * The checks of `POST /batch/` that need only the URL and headers, cheapest first: the compression parameter,
 * content type, content encoding, origin. A request that fails one is refused before its body is read.
 */
export function checkHead(request: Request, url: URL, config: Config, peer?: string): BatchHead {
  const receivedAt = timestampFromDate(new Date());
  const encoding = checkHeaders(request, url);
  const origin = request.headers.get("origin");
  checkOrigin(origin, config.allowedOrigins);
  const ip = config.captureIp
    ? clientIp(peer, request.headers.get("x-forwarded-for"), config.trustedProxies)
    : undefined;
  return { encoding, origin, receivedAt, ip };
}

/**
 * The rest of `POST /batch/` once the listener has read the body (size, encoding), in the order the checks run:
 * JSON, the payload (shape, event count), the api_key, and every event (timestamps and nesting fail the request,
 * events without a name or distinct ID are dropped). Only then is anything written; it resolves once the rows are
 * in ClickHouse.
 */
export async function captureBatch(
  body: Buffer,
  head: BatchHead,
  config: Config,
  sink: EventSink,
  geo?: GeoIp | undefined,
): Promise<CaptureResult> {
  const payload = parsePayload(parseBody(body), config.maxEventsPerBatch);
  checkApiKey(payload, head.origin, config.publicApiKeys);
  const { events, dropped } = acceptEvents(payload.batch);
  const context: BatchContext = {
    correctClockSkew: config.correctClockSkew,
    sentAt: sentAtOf(payload.sent_at),
    personlessEvents: config.personlessEvents,
    captureIp: config.captureIp,
    ip: head.ip,
    geo,
  };
  await ingestAccepted(events, sink, head.receivedAt, context);
  return { ingested: events.length, dropped };
}

/**
 * Hands accepted events to the sink in the form they are stored (an event without a timestamp happened at
 * `receivedAt`); settles once they are written. The API's and the import's one way in.
 */
export function ingestAccepted(
  events: readonly AcceptedEvent[],
  sink: EventSink,
  receivedAt: Timestamp = timestampFromDate(new Date()),
  context?: BatchContext,
): Promise<void> {
  return sink.ingest(events.map((event) => normalize(event, receivedAt, context)));
}
