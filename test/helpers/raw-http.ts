import { connect } from "node:net";

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/**
 * Writes bytes to a fresh TCP connection and collects everything the server sends until it closes the
 * connection or `waitMs` passes. For requests no HTTP client would send: HTTP/1.0 without Host, pipelining,
 * bodies cut short.
 */
export function rawExchange(port: number, bytes: string | Uint8Array, { waitMs = 2_000, abort = false } = {}) {
  return new Promise<string>((resolve, reject) => {
    let text = "";
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(bytes);
      if (abort) setTimeout(() => socket.destroy(), 20);
    });
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(text);
    };
    const timer = setTimeout(done, waitMs);
    socket.on("data", (chunk) => {
      text += chunk.toString("latin1");
    });
    socket.on("end", done);
    socket.on("close", done);
    socket.on("error", (error) => (abort ? done() : reject(error)));
  });
}

/** Splits a raw exchange into its HTTP responses (Content-Length framed, as this server answers). */
export function parseResponses(text: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  while (rest.startsWith("HTTP/")) {
    const headEnd = rest.indexOf("\r\n\r\n");
    if (headEnd < 0) break;
    const [statusLine = "", ...lines] = rest.slice(0, headEnd).split("\r\n");
    const headers = Object.fromEntries(
      lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]),
    );
    const length = Number(headers["content-length"] ?? 0);
    const bodyStart = headEnd + 4;
    responses.push({
      status: Number(statusLine.split(" ")[1]),
      headers,
      body: rest.slice(bodyStart, bodyStart + length),
    });
    rest = rest.slice(bodyStart + length);
  }
  return responses;
}
