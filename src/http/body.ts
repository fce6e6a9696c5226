import { promisify } from "node:util";
import { brotliDecompress, gunzip, inflate } from "node:zlib";

/**
 * Request bodies read within bounds, for both listeners: the bytes on the wire, then inflated as the body's
 * `Content-Encoding` says, each within the same most bytes, so neither a large upload nor a compression bomb is ever
 * held whole in memory. Each listener says what went wrong in its own terms (`BodyError.reason`).
 */

/** The encodings a body can be inflated from. */
export type BodyEncoding = "identity" | "gzip" | "deflate" | "br";

/** Why a body was not read: over `maxBytes`, cut off by the client, past the deadline, or not in its encoding. */
export type BodyFailure = "too_large" | "incomplete" | "timeout" | "corrupt";

export class BodyError extends Error {
  override readonly name = "BodyError";

  constructor(
    readonly reason: BodyFailure,
    readonly limit: number,
    cause?: unknown,
  ) {
    super(`request body: ${reason}`, cause === undefined ? undefined : { cause });
  }
}

export interface BodyLimits {
  /** Most bytes on the wire, and again once inflated. */
  readonly maxBytes: number;
  /** How long the whole body may take to arrive; no deadline without one. */
  readonly timeoutMs?: number;
  readonly encoding?: BodyEncoding;
  /**
   * Told the body's size as it arrives, then inflated; throws to refuse it (its error passes through as it is).
   * Never the declared length: a client that declares 20 MiB and sends nothing must not hold back everyone else.
   */
  readonly claim?: (bytes: number) => void;
}

/** Reads the body within `limits` and inflates it. */
export async function readBody(request: Request, limits: BodyLimits): Promise<Buffer> {
  const wire = await readWire(request, limits);
  const encoding = limits.encoding ?? "identity";
  if (encoding === "identity") return wire;
  const inflated = await inflateWithin(wire, encoding, limits.maxBytes);
  limits.claim?.(inflated.byteLength);
  return inflated;
}

async function readWire(request: Request, { maxBytes, timeoutMs, claim }: BodyLimits): Promise<Buffer> {
  const declared = Number(request.headers.get("content-length") ?? 0);
  if (declared > maxBytes) throw new BodyError("too_large", maxBytes);
  if (request.body === null) return Buffer.alloc(0);

  // Content-Length may be absent (chunked upload), so count what actually arrives, and stop at the deadline.
  // Leaving early cancels the stream, so the rest of the upload is never buffered.
  const reader = request.body.getReader();
  const deadline = Promise.withResolvers<never>();
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => deadline.reject(new BodyError("timeout", timeoutMs)), timeoutMs);
  const next = async () => {
    try {
      return await Promise.race([reader.read(), deadline.promise]);
    } catch (error) {
      // anything but the deadline means the client went away mid-upload
      throw error instanceof BodyError ? error : new BodyError("incomplete", maxBytes, error);
    }
  };
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (let read = await next(); !read.done; read = await next()) {
      size += read.value.byteLength;
      if (size > maxBytes) throw new BodyError("too_large", maxBytes);
      claim?.(size);
      chunks.push(read.value);
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks, size);
}

const INFLATE = {
  gzip: promisify(gunzip),
  deflate: promisify(inflate),
  br: promisify(brotliDecompress),
} as const;

async function inflateWithin(body: Buffer, encoding: Exclude<BodyEncoding, "identity">, maxBytes: number) {
  try {
    return await INFLATE[encoding](body, { maxOutputLength: maxBytes });
  } catch (error) {
    // zlib stops as soon as the output would pass the limit, so a bomb costs at most maxBytes.
    if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") throw new BodyError("too_large", maxBytes);
    throw new BodyError("corrupt", maxBytes, error);
  }
}

// Without a Host header (HTTP/1.0), or with one that is no host, Bun hands over a relative URL.
const BASE_URL = "http://localhost";

/** The request's URL, or null when it is not one. */
export function requestUrl(request: Request): URL | null {
  return URL.parse(request.url, BASE_URL);
}
