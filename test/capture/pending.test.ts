import { describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { PendingBytes } from "../../src/capture/pending";
import type { CapturedEvent } from "../../src/contract/event";
import { handle, serve } from "../../src/http/server";
import { harness, requestOf } from "../helpers/cases";
import { MemorySink } from "../helpers/memory-sink";

const BUSY = { status: "error", error: "The service is busy; retry shortly" };

describe("PendingBytes", () => {
  test("a lone claim is admitted whatever its size; another past the limit is refused until it is released", () => {
    const pending = new PendingBytes(100);
    const first = pending.claim();
    first.growTo(150); // alone: admitted
    const second = pending.claim();
    expect(() => second.growTo(1)).toThrow(expect.objectContaining({ status: 503, headers: { "Retry-After": "1" } }));
    first.release();
    second.growTo(60);
    const third = pending.claim();
    third.growTo(40); // exactly at the limit
    expect(() => third.growTo(41)).toThrow("The service is busy; retry shortly");
    expect(pending.held).toBe(100);
    third.growTo(10); // a claim never shrinks before its release
    expect(pending.held).toBe(100);
    second.release();
    third.release();
    third.release(); // twice gives nothing back twice
    expect(pending.held).toBe(0);
  });
});

/** A sink whose writes wait until released: requests stay in flight, holding their bytes. */
class HeldSink extends MemorySink {
  #release = Promise.withResolvers<void>();
  arrived = Promise.withResolvers<void>();

  override async ingest(events: readonly CapturedEvent[]): Promise<void> {
    this.arrived.resolve();
    await this.#release.promise;
    await super.ingest(events);
  }

  release(): void {
    this.#release.resolve();
  }
}

/** A batch whose JSON text is `bytes` long (padded with spaces). */
function body(bytes: number, distinctId: string): string {
  const text = JSON.stringify({ api_key: "key-1", batch: [{ event: "e", distinct_id: distinctId }] });
  return `${text.slice(0, -1)}${" ".repeat(bytes - text.length)}}`;
}

describe("MAX_PENDING_BYTES", () => {
  const env = { PUBLIC_API_KEYS: "key-1", MAX_BATCH_BYTES: "4000", MAX_PENDING_BYTES: "6000" };

  /** In process, with one server's shared budget: a 3,000-byte request ("first") read, checked and held at its write. */
  async function oneHeld() {
    const { app } = harness(env);
    const sink = new HeldSink();
    const shared = { ...app, sink, pending: new PendingBytes(app.config.maxPendingBytes) };
    const first = handle(requestOf("http://ingest.test", { body: body(3_000, "first") }), shared);
    await sink.arrived.promise;
    return { sink, shared, first };
  }

  test("bodies waiting for their write count: past the limit a request is 503 with Retry-After, and nothing of it is stored", async () => {
    const { app } = harness(env);
    const sink = new HeldSink();
    const server = serve({ ...app, sink });
    const url = `${server.url.href}batch/`;
    const post = (text: string) =>
      fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: text });
    try {
      const first = post(body(3_000, "first"));
      await sink.arrived.promise; // read, checked, and waiting for its write
      const refused = await post(body(3_500, "second"));
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(await refused.json()).toEqual(BUSY);
      sink.release();
      expect((await first).status).toBe(200);
      const retried = await post(body(3_500, "second")); // the first is answered: its bytes are free again
      expect(retried.status).toBe(200);
      expect(sink.events.map((event) => event.distinctId)).toEqual(["first", "second"]);
    } finally {
      await server.stop(true);
    }
  });

  test("a chunked upload is refused as soon as what has arrived passes the limit", async () => {
    const { sink, shared, first } = await oneHeld();
    // Endless: had the server kept reading, it would have answered 413 at MAX_BATCH_BYTES instead.
    const upload = new ReadableStream<Uint8Array>({
      pull: (controller) => controller.enqueue(new Uint8Array(500).fill(32)),
    });
    const refused = await handle(requestOf("http://ingest.test", { body: upload }), shared);
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual(BUSY);
    sink.release();
    expect((await first).status).toBe(200);
    expect(shared.pending.held).toBe(0);
    expect(sink.events.map((event) => event.distinctId)).toEqual(["first"]);
  });

  test("a gzip body counts at its inflated size", async () => {
    const { sink, shared, first } = await oneHeld();
    const small = body(2_000, "small"); // both sent gzipped: about 100 bytes on the wire
    const large = body(3_500, "large");
    expect(Bun.gzipSync(large).byteLength).toBeLessThan(200);
    const refused = await handle(requestOf("http://ingest.test", { gzip: true, body: large }), shared);
    expect(refused.status).toBe(503);
    const admitted = handle(requestOf("http://ingest.test", { gzip: true, body: small }), shared);
    sink.release();
    expect((await first).status).toBe(200);
    expect((await admitted).status).toBe(200);
    expect(sink.events.map((event) => event.distinctId)).toEqual(["first", "small"]);
  });

  test("a declared length claims nothing: a client that announces a large body and sends none holds no one back", async () => {
    const { app } = harness(env);
    const server = serve(app);
    const socket = connect(server.port ?? 0, "127.0.0.1");
    try {
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      const head = `POST /batch/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3900\r\n\r\n{`;
      socket.write(head);
      await Bun.sleep(50);
      const answer = await fetch(`${server.url.href}batch/`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: body(3_000, "meanwhile"),
      });
      expect(answer.status).toBe(200);
    } finally {
      socket.destroy();
      await server.stop(true);
    }
  });

  test("a refused request releases what it claimed", async () => {
    const { app } = harness(env);
    const pending = new PendingBytes(app.config.maxPendingBytes);
    const shared = { ...app, pending };
    const bad = await handle(requestOf("http://ingest.test", { body: "{nope" }), shared);
    expect(bad.status).toBe(400);
    const tooLarge = await handle(requestOf("http://ingest.test", { body: " ".repeat(4_001) }), shared);
    expect(tooLarge.status).toBe(413);
    expect(pending.held).toBe(0);
  });
});
