import { describe, expect, test } from "bun:test";
import { PendingBytes } from "../../src/capture/pending";
import { loadConfig } from "../../src/config";
import type { ErrorCode, IngestError } from "../../src/contract/errors";
import { type App, handle, serve } from "../../src/http";
import type { Answer } from "../../src/telemetry";
import { MemorySink } from "./memory-sink";

/**
 * Request rules as case tables: each case runs in-process through `handle(new Request(…))` and again over a
 * real socket, against an in-memory sink, so no database is involved. A failing case must answer the exact
 * Error object with the right status and code, and hand nothing to the sink.
 */

export interface CaseRequest {
  /** Default `/batch/`. */
  readonly path?: string;
  /** Default POST. */
  readonly method?: string;
  /** Over `content-type: application/json`; a null value removes the header. */
  readonly headers?: Record<string, string | null>;
  /** A JSON value, or raw text or bytes, or a stream made fresh for each run. */
  readonly body?: unknown;
  readonly gzip?: boolean;
}

/** Response headers that must have these values; null means the header must be absent. */
type ExpectedHeaders = Record<string, string | null>;

export type Expected =
  | { readonly status: 200; readonly ingested: number; readonly dropped?: number; readonly headers?: ExpectedHeaders }
  | { readonly status: 204; readonly headers: ExpectedHeaders }
  | {
      readonly status: number;
      readonly code: ErrorCode;
      /** The exact message, or a pattern it must match. */
      readonly error?: string | RegExp;
      readonly headers?: ExpectedHeaders;
    };

export interface Case {
  readonly name: string;
  /** Configuration variables over a listening-anywhere base. */
  readonly env?: Record<string, string>;
  readonly request: CaseRequest;
  readonly expect: Expected;
}

export type Body = string | Uint8Array | ReadableStream<Uint8Array> | null;

/** The request's body bytes; strings go as bytes, so nothing adds a Content-Type of its own. */
export function bodyOf({ body, gzip }: CaseRequest): Body {
  if (body === undefined) return null;
  if (body instanceof ReadableStream) return body;
  if (typeof body === "function") return (body as () => ReadableStream<Uint8Array>)();
  const raw =
    body instanceof Uint8Array
      ? body
      : new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body));
  return gzip ? Bun.gzipSync(raw as Uint8Array<ArrayBuffer>) : raw;
}

export function requestOf(base: string, spec: CaseRequest): Request {
  const headers = new Headers({ "content-type": "application/json" });
  if (spec.gzip) headers.set("content-encoding", "gzip");
  for (const [name, value] of Object.entries(spec.headers ?? {})) {
    if (value === null) headers.delete(name);
    else headers.set(name, value);
  }
  const body = bodyOf(spec);
  return new Request(`${base}${spec.path ?? "/batch/"}`, {
    method: spec.method ?? "POST",
    headers,
    body: body as RequestInit["body"],
    ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
  } as RequestInit);
}

/** A handler for one configuration: its sink, every answer it reported, and the failures among them. */
export interface Harness {
  readonly app: App;
  readonly sink: MemorySink;
  readonly answers: Answer[];
  readonly failures: IngestError[];
}

export function harness(env: Record<string, string> = {}): Harness {
  const sink = new MemorySink();
  const answers: Answer[] = [];
  const failures: IngestError[] = [];
  const config = loadConfig({ HOST: "127.0.0.1", PORT: "0", ...env });
  const observer = {
    answered(answer: Answer) {
      answers.push(answer);
      if (answer.failure) failures.push(answer.failure);
    },
  };
  return {
    app: { config, sink, observer, pending: new PendingBytes(config.maxPendingBytes) },
    sink,
    answers,
    failures,
  };
}

export interface Transport {
  readonly name: string;
  send(app: App, spec: CaseRequest): Promise<Response>;
}

export const inProcess: Transport = {
  name: "in-process",
  send: (app, spec) => handle(requestOf("http://ingest.test", spec), app),
};

export const overSocket: Transport = {
  name: "over a socket",
  async send(app, spec) {
    const server = serve(app);
    try {
      const response = await fetch(requestOf(server.url.href.replace(/\/$/, ""), spec));
      // Read the body before the server stops, and hand back a response that owns it.
      return new Response(await response.arrayBuffer(), response);
    } finally {
      await server.stop(true);
    }
  },
};

export const TRANSPORTS: readonly Transport[] = [inProcess, overSocket];

/** Runs every case over every transport. */
export function runCases(title: string, cases: readonly Case[]): void {
  describe(title, () => {
    for (const transport of TRANSPORTS) {
      describe(transport.name, () => {
        for (const c of cases) test(c.name, () => checkCase(transport, c));
      });
    }
  });
}

async function checkCase(transport: Transport, c: Case): Promise<void> {
  const { app, sink, failures } = harness(c.env);
  const response = await transport.send(app, c.request);
  const expected = c.expect;
  for (const [name, value] of Object.entries(expected.headers ?? {})) {
    expect(`${name}: ${response.headers.get(name)}`).toBe(`${name}: ${value}`);
  }
  if ("ingested" in expected) {
    expect({ status: response.status, body: await response.json() }).toEqual({
      status: 200,
      body: { status: "ok", ingested: expected.ingested, dropped: expected.dropped ?? 0 },
    });
    expect(sink.events).toHaveLength(expected.ingested);
    return;
  }
  if (!("code" in expected)) {
    expect({ status: response.status, body: await response.text() }).toEqual({ status: expected.status, body: "" });
    expect(sink.events).toEqual([]);
    return;
  }
  const error =
    expected.error === undefined
      ? expect.any(String)
      : typeof expected.error === "string"
        ? expected.error
        : expect.stringMatching(expected.error);
  expect({ status: response.status, code: failures[0]?.code, body: await response.json() }).toEqual({
    status: expected.status,
    code: expected.code,
    body: { status: "error", error },
  });
  expect(response.headers.get("content-type")).toContain("application/json");
  expect(sink.events).toEqual([]);
}
