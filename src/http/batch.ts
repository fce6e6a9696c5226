import { captureBatch, checkHead, type GeoIp, type PendingBytes } from "../capture";
import type { Config } from "../config";
import { type CaptureResult, type EventSink, fail, type IngestError } from "../contract";
import { BodyError, type BodyFailure, readBody } from "./body";

/**
 * `POST /batch/`: the head's checks (capture), then the body read within `MAX_BATCH_BYTES` and
 * `REQUEST_TIMEOUT_MS`, then the rest of capture. The body's bytes count against `MAX_PENDING_BYTES` until the
 * request is answered: its events stay in memory until they are written.
 */
export async function batch(
  request: Request,
  url: URL,
  app: {
    readonly config: Config;
    readonly sink: EventSink;
    readonly pending: PendingBytes;
    readonly geo?: GeoIp | undefined;
  },
  peer?: string,
): Promise<CaptureResult> {
  const { config } = app;
  const head = checkHead(request, url, config, peer);
  const claim = app.pending.claim();
  try {
    const body = await readBody(request, {
      maxBytes: config.maxBatchBytes,
      timeoutMs: config.requestTimeoutMs,
      encoding: head.encoding,
      claim: claim.growTo,
    }).catch((error: unknown) => {
      throw error instanceof BodyError ? BODY_FAILURES[error.reason](error) : error;
    });
    return await captureBatch(body, head, config, app.sink, app.geo);
  } finally {
    claim.release();
  }
}

/** A body that could not be read, as the contract says it. */
const BODY_FAILURES: Readonly<Record<BodyFailure, (error: BodyError) => IngestError>> = {
  too_large: (error) => fail.bodyTooLarge(error.limit),
  timeout: (error) => fail.requestTimeout(error.limit),
  // the client went away mid-upload: no fault of ours, nobody to answer
  incomplete: (error) => fail.incompleteBody(error.cause),
  corrupt: (error) => fail.invalidGzip(error.cause),
};
