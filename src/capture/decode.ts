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
  if (url.searchParams.has("compression")) throw fail.compressionParam();
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

/**
 * Reads the body and parses it as JSON. `maxBytes` bounds both the bytes on the wire and, for gzip, the
 * inflated bytes, so neither a large upload nor a gzip bomb is ever held whole in memory.
 */
export async function decodeBody(request: Request, encoding: ContentEncoding, maxBytes: number): Promise<unknown> {
  const wire = await readBody(request, maxBytes);
  const json = encoding === "gzip" ? await inflate(wire, maxBytes) : wire;
  try {
    return parseJson(json.toString("utf8"));
  } catch (error) {
    throw fail.invalidPayload(error);
  }
}

async function readBody(request: Request, maxBytes: number): Promise<Buffer> {
  const declared = Number(request.headers.get("content-length") ?? 0);
  if (declared > maxBytes) throw fail.bodyTooLarge(maxBytes);
  if (request.body === null) return Buffer.alloc(0);

  // Content-Length may be absent (chunked upload), so count what actually arrives. Leaving the loop early
  // cancels the stream, and the rest of the upload is never buffered.
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of request.body) {
      size += chunk.byteLength;
      if (size > maxBytes) throw fail.bodyTooLarge(maxBytes);
      chunks.push(chunk);
    }
  } catch (error) {
    // The client went away mid-upload: nobody reads the answer, and it is no fault of ours.
    throw error instanceof IngestError ? error : fail.incompleteBody(error);
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
