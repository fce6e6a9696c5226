/**
 * Every failure a client can see. Status codes and the spec's fixed message texts (SPEC §7) live here and
 * nowhere else; the server turns an `IngestError` into the Error object and anything else into a 500.
 */
export class IngestError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "IngestError";
  }
}

export const fail = {
  // 400
  invalidPayload: () => new IngestError(400, "Payload must be a JSON object with a non-empty batch array"),
  mixedApiKeys: () => new IngestError(400, "Mixed api_key values in one request are not supported"),
  invalidGzip: () => new IngestError(400, "Request body is not valid gzip"),
  invalidTimestamp: (index: number) =>
    new IngestError(400, `Invalid timestamp in batch[${index}]: expected an ISO 8601 date-time between 1900 and 2299`),
  // 401, 403
  invalidApiKey: () => new IngestError(401, "Invalid api_key"),
  originNotAllowed: () => new IngestError(403, "Origin is not allowed"),
  // 404, 405
  notFound: () => new IngestError(404, "Not found"),
  methodNotAllowed: (allowed: string) =>
    new IngestError(405, `Method not allowed. Use ${allowed}.`, { Allow: allowed }),
  // 413
  tooManyEvents: (count: number, max: number) => new IngestError(413, `Batch has ${count} events, maximum is ${max}`),
  bodyTooLarge: (max: number) => new IngestError(413, `Request body is larger than the maximum of ${max} bytes`),
  // 415
  unsupportedContentType: () => new IngestError(415, "Unsupported content type. Use application/json."),
  unsupportedContentEncoding: (value: string) => new IngestError(415, `Unsupported content-encoding: ${value}`),
  compressionParam: () =>
    new IngestError(
      415,
      "The compression query parameter is not supported. Send gzip-compressed JSON with Content-Encoding: gzip instead.",
    ),
} as const;

/** The 500 text: the cause is logged, never sent. */
export const INTERNAL_ERROR_MESSAGE = "Internal server error";
