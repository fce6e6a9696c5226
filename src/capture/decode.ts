import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import { fail, IngestError } from "../errors";
import { parseJson } from "../json";

export type ContentEncoding = "identity" | "gzip";

/**
 * The checks that need only the URL and headers, so a wrong request is refused before its body is read:
 * the `compression` query parameter, then `Content-Type`, then `Content-Encoding`.
 */
export function checkHeaders(request: Request, url: URL): ContentEncoding {
  if (url.searchParams.has("compression")) throw fail.compressionNotSupported();
  if (!isJson(request.headers.get("content-type"))) throw fail.unsupportedContentType();
  return contentEncoding(request.headers.get("content-encoding"));
}

/** `application/json`, in any case, with or without parameters such as `charset=utf-8`. */
function isJson(contentType: string | null): boolean {
  const mediaType = contentType?.split(";", 1)[0]?.trim().toLowerCase();
  return mediaType === "application/json";
}

function contentEncoding(header: string | null): ContentEncoding {
  const value = header?.trim() ?? "";
  if (value === "") return "identity";
  if (value.toLowerCase() === "gzip") return "gzip";
  throw fail.unsupportedContentEncoding(value);
}

export interface BodyLimits {
  /** Most bytes on the wire, and again after gzip inflation. */
  readonly maxBytes: number;
  /** How long the whole body may take to arrive. */
  readonly timeoutMs: number;
  /**
   * Told the body's size as it arrives, then inflated; throws to refuse it. Never the declared length: a client
   * that declares 20 MiB and sends nothing must not hold back everyone else.
   */
  readonly claim?: (bytes: number) => void;
}

/**
 * Reads the body and parses it as JSON. `maxBytes` bounds both the bytes on the wire and, for gzip, the
 * inflated bytes, so neither a large upload nor a gzip bomb is ever held whole in memory; `timeoutMs` bounds
 * how long an upload may trickle in.
 */
export async function decodeBody(request: Request, encoding: ContentEncoding, limits: BodyLimits): Promise<unknown> {
  const wire = await readBody(request, limits);
  const json = encoding === "gzip" ? await inflate(wire, limits.maxBytes) : wire;
  limits.claim?.(json.byteLength);
  try {
    return parseJson(json.toString("utf8"));
  } catch (error) {
    throw fail.invalidPayload(error);
  }
}

async function readBody(request: Request, { maxBytes, timeoutMs, claim }: BodyLimits): Promise<Buffer> {
  const declared = Number(request.headers.get("content-length") ?? 0);
  if (declared > maxBytes) throw fail.bodyTooLarge(maxBytes);
  if (request.body === null) return Buffer.alloc(0);

  // Content-Length may be absent (chunked upload), so count what actually arrives, and stop at the deadline.
  // Leaving early cancels the stream, so the rest of the upload is never buffered.
  const reader = request.body.getReader();
  const deadline = Promise.withResolvers<never>();
  const timer = setTimeout(() => deadline.reject(fail.requestTimeout(timeoutMs)), timeoutMs);
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    const next = () => Promise.race([reader.read(), deadline.promise]);
    for (let read = await next(); !read.done; read = await next()) {
      size += read.value.byteLength;
      if (size > maxBytes) throw fail.bodyTooLarge(maxBytes);
      claim?.(size);
      chunks.push(read.value);
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    // Anything but our own refusal means the client went away mid-upload: no fault of ours, nobody to answer.
    throw error instanceof IngestError ? error : fail.incompleteBody(error);
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks, size);
}

const gunzipAsync = promisify(gunzip);

async function inflate(body: Buffer, maxBytes: number): Promise<Buffer> {
  try {
    return await gunzipAsync(body, { maxOutputLength: maxBytes });
  } catch (error) {
    // zlib stops as soon as the output would pass the limit, so a bomb costs at most maxBytes.
    if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") throw fail.bodyTooLarge(maxBytes);
    throw fail.invalidGzip(error);
  }
}
