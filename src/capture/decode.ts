import { fail, parseJson } from "../contract";

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

/** The body's JSON, read keeping every number's value (`parseJson`); anything but JSON is an invalid payload. */
export function parseBody(body: Buffer): unknown {
  try {
    return parseJson(body.toString("utf8"));
  } catch (error) {
    throw fail.invalidPayload(error);
  }
}
