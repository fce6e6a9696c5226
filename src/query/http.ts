import { type BodyEncoding, BodyError, readBody, requestUrl } from "../http";
import type { QueryObserver, QueryOutcome } from "../telemetry";
import { authenticates, authenticationFailed, type Credentials, credentialsOf } from "./auth";
import type { QueryEngine } from "./engine";
import { QueryError } from "./errors";
import { readParams } from "./params";
import type { RunningQuery } from "./running";
import { MAX_QUERY_BYTES } from "./settings";
import { sentText } from "./statement";

export interface QueryApp {
  readonly engine: QueryEngine;
  readonly credentials: Credentials;
  /** `QUERY_READONLY`. */
  readonly readonly: boolean;
  /** `X-ClickHouse-Server-Display-Name`. */
  readonly displayName: string;
  readonly observer?: QueryObserver;
}

/** Most of a result `wait_end_of_query` holds back before sending it as it comes. */
export const MAX_WAIT_BUFFER_BYTES = 32 * 1024 * 1024;

/** Most body bytes an INSERT may send at once, inflated. */
export const MAX_INSERT_BYTES = 256 * 1024 * 1024;

const OK = "Ok.\n";

/**
 * ClickHouse's HTTP interface over the embedded engine: `/ping`, and queries at `/` by GET or POST. Errors are
 * sent as ClickHouse sends them, with its status codes, so unmodified clients raise their usual errors.
 * See docs/query.md#the-http-interface.
 */
export async function handleQuery(request: Request, app: QueryApp): Promise<Response> {
  const url = requestUrl(request);
  const path = url?.pathname ?? "";
  if (path === "/ping" || path === "/replicas_status") return text(OK, 200, app);
  if (path !== "/" || url === null) {
    return text(`There is no handle ${path.slice(0, 200)}\n\nUse / or /ping for health checks.\n`, 404, app);
  }
  if (request.method === "OPTIONS") return new Response(null, { status: 204 });
  if (request.method !== "GET" && request.method !== "POST" && request.method !== "HEAD") {
    return text("Method not allowed. Use GET or POST.\n", 405, app);
  }
  if (request.method !== "POST" && !url.searchParams.has("query")) return text(OK, 200, app);
  return new QueryExchange(request, url.searchParams, app).answer();
}

/** One query request and its answer. */
class QueryExchange {
  readonly #started = performance.now();
  readonly #startedAt = new Date();
  /** Set once the credentials are read: a request whose credentials cannot be read is logged with no user. */
  #user = "";
  /** Frees the query's ID once it is answered (`QueryEngine.claimQueryId`). */
  #unclaim: (() => void) | undefined;
  /** What the query log keeps: set once the request is authenticated and read. */
  #logged: { text: string; database: string; bound: boolean } | undefined;
  #queryId: string;
  #statement: string | undefined;
  /** Marks an error written into a result already under way, as ClickHouse (25.11 and later) does. */
  readonly #exceptionTag = exceptionTag();

  constructor(
    private readonly request: Request,
    private readonly search: URLSearchParams,
    private readonly app: QueryApp,
  ) {
    this.#queryId = crypto.randomUUID();
  }

  async answer(): Promise<Response> {
    let running: RunningQuery | undefined;
    try {
      const credentials = credentialsOf(this.request, this.search);
      this.#user = credentials.user;
      if (!authenticates(credentials, this.app.credentials)) throw authenticationFailed(credentials.user);
      const access = !this.app.readonly && this.request.method === "POST" ? "write" : "read";
      let body = await readQueryBody(this.request, access === "write" ? MAX_INSERT_BYTES : MAX_QUERY_BYTES);
      const search = new URLSearchParams(this.search);
      if (/^multipart\/form-data\b/i.test(this.request.headers.get("content-type") ?? "")) {
        // the query and its param_ values as form fields (a client's use_multipart_params), as URL parameters are
        for (const [name, value] of await formFields(body, this.request.headers)) search.append(name, value);
        body = new Uint8Array(0);
      }
      const params = readParams(search, this.request.headers);
      if (params.queryId !== undefined) this.#queryId = params.queryId;
      this.#unclaim = this.app.engine.claimQueryId(this.#queryId);
      this.#logged = {
        text: sentText(params.query, body, MAX_QUERY_BYTES),
        database: params.database ?? this.app.engine.database,
        bound: Object.keys(params.params).length > 0,
      };
      running = await this.app.engine.run({
        query: params.query,
        body,
        access,
        database: params.database,
        defaultFormat: params.defaultFormat,
        params: params.params,
        settings: params.settings,
        session: params.session,
      });
      this.#statement = running.statement;
      const compression = params.compressResponse
        ? chooseEncoding(this.request.headers.get("accept-encoding"))
        : undefined;
      return params.waitEndOfQuery
        ? await this.#whole(running, compression)
        : await this.#streamed(running, compression);
    } catch (caught) {
      running?.close();
      return this.#failure(caught instanceof QueryError ? caught : QueryError.fromEngine(caught));
    }
  }

  /**
   * `wait_end_of_query=1`: the whole result first, so an error still gets its status and the summary is complete.
   * Up to `MAX_WAIT_BUFFER_BYTES` of it: a larger result is sent as it comes from there on, as ClickHouse sends
   * what outgrows its buffer (ClickHouse spills to disk instead; this keeps memory bounded).
   */
  async #whole(running: RunningQuery, compression: Encoding | undefined): Promise<Response> {
    const buffered: Uint8Array[] = [];
    const chunks = running.chunks();
    let size = 0;
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
      buffered.push(next.value);
      size += next.value.byteLength;
      if (size > MAX_WAIT_BUFFER_BYTES) return this.#streamed(running, compression, buffered, chunks);
    }
    this.#observe("ok", 200, running);
    const body = new Blob(buffered as Uint8Array<ArrayBuffer>[]).stream();
    return new Response(compress(body, compression), { headers: this.#headers(running, compression) });
  }

  /**
   * The result as the engine produces it (after what was `buffered` of it already); an error after the first bytes
   * is written into the body, as ClickHouse does.
   */
  async #streamed(
    running: RunningQuery,
    compression: Encoding | undefined,
    buffered: Uint8Array[] = [],
    chunks = running.chunks(),
  ): Promise<Response> {
    const headers = this.#headers(running, compression);
    const body = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        try {
          const held = buffered.shift();
          if (held !== undefined) return controller.enqueue(held);
          const next = await chunks.next();
          if (!next.done) return controller.enqueue(next.value);
          this.#observe("ok", 200, running);
        } catch (caught) {
          const error = caught instanceof QueryError ? caught : QueryError.fromEngine(caught);
          controller.enqueue(new TextEncoder().encode(exceptionBlock(error, this.#exceptionTag)));
          this.#observe(outcomeOf(error), 200, running, error);
        }
        controller.close();
      },
      cancel: async () => {
        // the client went away: stop the query and free its place
        running.close();
        await chunks.return(undefined);
        this.#observe("failed", 499, running);
      },
    });
    return new Response(compress(body, compression), { headers });
  }

  #headers(running: RunningQuery, compression: Encoding | undefined): Headers {
    const headers = new Headers({
      "Content-Type": contentType(running.format),
      "X-ClickHouse-Server-Display-Name": this.app.displayName,
      "X-ClickHouse-Query-Id": headerText(this.#queryId),
      "X-ClickHouse-Timezone": this.app.engine.timezone,
      "X-ClickHouse-Summary": JSON.stringify(this.#summary(running)),
      "X-ClickHouse-Exception-Tag": this.#exceptionTag,
    });
    if (running.format !== undefined) headers.set("X-ClickHouse-Format", running.format);
    if (compression !== undefined) headers.set("Content-Encoding", compression);
    return headers;
  }

  /** ClickHouse's summary; the embedded engine does not report the rows a query read, only what it returned. */
  #summary(running: RunningQuery): Record<string, string> {
    const elapsedNs = Math.round((performance.now() - this.#started) * 1e6);
    return {
      read_rows: "0",
      read_bytes: "0",
      written_rows: String(running.writtenRows),
      written_bytes: "0",
      total_rows_to_read: "0",
      result_rows: String(running.result.rows),
      result_bytes: String(running.result.bytes),
      elapsed_ns: String(elapsedNs),
    };
  }

  /** An error before any byte of the result: its status and text, compressed when the client asked for that. */
  #failure(error: QueryError): Response {
    this.#observe(outcomeOf(error), error.status, undefined, error);
    const compression = /^(1|true)$/i.test(this.search.get("enable_http_compression") ?? "")
      ? chooseEncoding(this.request.headers.get("accept-encoding"))
      : undefined;
    const headers = new Headers({
      "Content-Type": "text/plain; charset=UTF-8",
      "X-ClickHouse-Server-Display-Name": this.app.displayName,
      "X-ClickHouse-Query-Id": headerText(this.#queryId),
      "X-ClickHouse-Exception-Code": String(error.code),
    });
    if (compression !== undefined) headers.set("Content-Encoding", compression);
    const body = new Blob([`${error.text}\n`]).stream() as ReadableStream<Uint8Array>;
    return new Response(compress(body, compression), { status: error.status, headers });
  }

  #observed = false;

  #observe(outcome: QueryOutcome, status: number, running: RunningQuery | undefined, error?: QueryError): void {
    if (this.#observed) return;
    this.#observed = true;
    this.#unclaim?.();
    this.app.observer?.answered({
      user: this.#user,
      outcome,
      status,
      statement: this.#statement,
      error: error?.type,
      queryId: this.#queryId,
      seconds: (performance.now() - this.#started) / 1000,
      resultRows: running?.result.rows ?? 0,
      resultBytes: running?.result.bytes ?? 0,
      writtenRows: running?.writtenRows ?? 0,
    });
    if (this.#logged !== undefined) {
      const { bound, ...logged } = this.#logged;
      this.app.engine.record({
        queryId: this.#queryId,
        user: this.#user,
        ...logged,
        statement: this.#statement,
        startedAt: this.#startedAt,
        seconds: (performance.now() - this.#started) / 1000,
        resultRows: running?.result.rows ?? 0,
        resultBytes: running?.result.bytes ?? 0,
        writtenRows: running?.writtenRows ?? 0,
        // the engine's messages quote the statement, and so the values the port bound into it: not for other readers
        error: error && {
          code: error.code,
          text: bound
            ? `Code: ${error.code}. DB::Exception: (withheld: it may quote bound parameters). (${error.type})`
            : error.text,
          whileProcessing: running !== undefined,
        },
        method: this.request.method,
      });
    }
  }
}

/** A header's value as a server sends it: the text's UTF-8 bytes (a header carries bytes, which Bun takes as Latin-1). */
const headerText = (text: string) => Buffer.from(text, "utf8").toString("latin1");

/** A tag of 16 letters and digits, new for each response, that the body of a failed result cannot forge. */
function exceptionTag(): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => alphabet[byte % alphabet.length]).join("");
}

/** Longest error message an exception block carries, as on ClickHouse. */
const MAX_EXCEPTION_MESSAGE_BYTES = 16 * 1024;

/**
 * An error after the result's first bytes, as ClickHouse (25.11 and later) ends such a body, so that clients tell
 * it from data: `\r\n__exception__\r\n<tag>\r\n<message>\n<length> <tag>\r\n__exception__\r\n`, with the tag of the
 * response's `X-ClickHouse-Exception-Tag` header and the message's length in bytes (its line break included).
 */
function exceptionBlock(error: QueryError, tag: string): string {
  const bytes = new TextEncoder().encode(error.text).subarray(0, MAX_EXCEPTION_MESSAGE_BYTES);
  const message = `${new TextDecoder().decode(bytes).replace(/\uFFFD$/, "")}\n`;
  const length = new TextEncoder().encode(message).byteLength;
  return `\r\n__exception__\r\n${tag}\r\n${message}${length} ${tag}\r\n__exception__\r\n`;
}

/**
 * A multipart/form-data body's fields. A file among them is a server's external data (a temporary table for the
 * query, with its structure in `<name>_structure`), which the port does not take: refused as such, rather than
 * its structure failing as an unknown setting.
 */
async function formFields(body: Uint8Array, headers: Headers): Promise<[string, string][]> {
  let fields: [string, unknown][];
  try {
    fields = [...(await new Response(body as Uint8Array<ArrayBuffer>, { headers }).formData())];
  } catch {
    throw QueryError.of("BAD_ARGUMENTS", "Cannot read the multipart/form-data body");
  }
  if (fields.some(([, value]) => typeof value !== "string")) {
    throw QueryError.of(
      "NOT_IMPLEMENTED",
      "External data (a file in a multipart/form-data body) is not supported on this port; insert the rows into a table of your own, or use a table function such as values()",
    );
  }
  return fields as [string, string][];
}

function outcomeOf(error: QueryError): QueryOutcome {
  if (error.type === "AUTHENTICATION_FAILED") return "unauthenticated";
  if (error.type === "TOO_MANY_SIMULTANEOUS_QUERIES") return "busy";
  if (error.type === "READONLY" || error.type === "ACCESS_DENIED") return "refused";
  return "failed";
}

function text(body: string, status: number, app: QueryApp): Response {
  return new Response(body, {
    status,
    headers: { "Content-Type": "text/plain; charset=UTF-8", "X-ClickHouse-Server-Display-Name": app.displayName },
  });
}

type Encoding = "gzip" | "deflate";

/** The compression the client accepts that the port can do (ClickHouse's `enable_http_compression`). */
function chooseEncoding(accepted: string | null): Encoding | undefined {
  const names = (accepted ?? "")
    .toLowerCase()
    .split(",")
    .map((item) => item.split(";")[0]!.trim());
  if (names.includes("gzip")) return "gzip";
  if (names.includes("deflate")) return "deflate";
  return undefined;
}

function compress(body: ReadableStream<Uint8Array>, encoding: Encoding | undefined): ReadableStream<Uint8Array> {
  return encoding === undefined
    ? body
    : body.pipeThrough(new CompressionStream(encoding) as ReadableWritablePair<Uint8Array, Uint8Array>);
}

/**
 * The body, inflated as `Content-Encoding` says (gzip, deflate, br), within `maxBytes` on the wire and inflated:
 * a query's text, or an INSERT's data.
 */
async function readQueryBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  if (request.method !== "POST" || request.body === null) return new Uint8Array(0);
  const encoding = request.headers.get("content-encoding")?.trim().toLowerCase() || "identity";
  if (!BODY_ENCODINGS.has(encoding)) {
    throw QueryError.of("UNKNOWN_COMPRESSION_METHOD", `Unknown compression method: ${encoding.slice(0, 50)}`);
  }
  try {
    return await readBody(request, { maxBytes, encoding: encoding as BodyEncoding });
  } catch (error) {
    if (!(error instanceof BodyError)) throw error;
    if (error.reason === "too_large") {
      throw QueryError.of("QUERY_IS_TOO_LARGE", `Request body is larger than the maximum of ${maxBytes} bytes`);
    }
    if (error.reason === "corrupt")
      throw QueryError.of("BAD_ARGUMENTS", `Cannot decompress the request body (${encoding})`);
    throw error.cause; // the client went away: the engine's error for it
  }
}

const BODY_ENCODINGS: ReadonlySet<string> = new Set<BodyEncoding>(["identity", "gzip", "deflate", "br"]);

/** The content type ClickHouse sends a format with. */
function contentType(format: string | undefined): string {
  if (format === undefined) return "text/plain; charset=UTF-8";
  if (/^(JSONEachRow|JSONStringsEachRow|JSONLines|NDJSON|JSONL)$/i.test(format)) {
    return "application/x-ndjson; charset=UTF-8";
  }
  if (/^JSON/i.test(format)) return "application/json; charset=UTF-8";
  if (/^CSV/i.test(format)) return `text/csv; charset=UTF-8; header=${/Names/i.test(format) ? "present" : "absent"}`;
  if (/^(TSV|TabSeparated)/i.test(format)) return "text/tab-separated-values; charset=UTF-8";
  if (/^XML$/i.test(format)) return "application/xml; charset=UTF-8";
  if (
    /^(Parquet|Arrow|ArrowStream|ORC|Avro|Native|RowBinary\w*|MsgPack|Protobuf\w*|CapnProto|BSONEachRow|Npy)$/i.test(
      format,
    )
  ) {
    return "application/octet-stream";
  }
  return "text/plain; charset=UTF-8";
}
