import { describe, expect, test } from "bun:test";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { BodyError, readBody } from "../../src/http";

/** A request whose body arrives as `chunks`, one every `gapMs`, and maybe ends with an error. */
function streamed(chunks: readonly Uint8Array[], { gapMs = 0, fail = false } = {}): Request {
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (gapMs > 0) await Bun.sleep(gapMs);
      if (next < chunks.length) return controller.enqueue(chunks[next++]!);
      if (fail) return controller.error(new Error("connection reset"));
      controller.close();
    },
  });
  return new Request("http://localhost/", { method: "POST", body });
}

const bytes = (size: number) => new Uint8Array(size).fill(0x61);

async function failure(request: Request, limits: Parameters<typeof readBody>[1]) {
  const error = await readBody(request, limits).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof BodyError)) throw new Error(`expected a BodyError, got ${String(error)}`);
  return { reason: error.reason, limit: error.limit };
}

describe("readBody", () => {
  test("reads a body within its bound, and inflates gzip, deflate and br", async () => {
    const text = "x".repeat(1000);
    const post = (body: Uint8Array | string) => new Request("http://l/", { method: "POST", body });
    expect((await readBody(post(text), { maxBytes: 1000 })).toString()).toBe(text);
    for (const [encoding, packed] of [
      ["gzip", gzipSync(text)],
      ["deflate", deflateSync(text)],
      ["br", brotliCompressSync(text)],
    ] as const) {
      expect({ encoding, text: (await readBody(post(packed), { maxBytes: 1000, encoding })).toString() }).toEqual({
        encoding,
        text,
      });
    }
  });

  test("too large: declared, as it arrives, and once inflated (a bomb costs at most the bound)", async () => {
    const declared = new Request("http://l/", { method: "POST", body: "xx", headers: { "content-length": "2000" } });
    expect(await failure(declared, { maxBytes: 1000 })).toEqual({ reason: "too_large", limit: 1000 });
    expect(await failure(streamed([bytes(600), bytes(600)]), { maxBytes: 1000 })).toEqual({
      reason: "too_large",
      limit: 1000,
    });
    const bomb = new Request("http://l/", { method: "POST", body: Bun.gzipSync(bytes(10_000_000)) });
    expect(await failure(bomb, { maxBytes: 100_000, encoding: "gzip" })).toEqual({
      reason: "too_large",
      limit: 100_000,
    });
  });

  test("corrupt, cut off by the client, or past the deadline", async () => {
    const notGzip = new Request("http://l/", { method: "POST", body: "plain text" });
    expect(await failure(notGzip, { maxBytes: 1000, encoding: "gzip" })).toMatchObject({ reason: "corrupt" });
    expect(await failure(streamed([bytes(10)], { fail: true }), { maxBytes: 1000 })).toMatchObject({
      reason: "incomplete",
    });
    expect(await failure(streamed([bytes(10), bytes(10)], { gapMs: 200 }), { maxBytes: 1000, timeoutMs: 100 })).toEqual(
      {
        reason: "timeout",
        limit: 100,
      },
    );
  });

  test("the claim is told each size as it grows, and its refusal passes through as it is", async () => {
    const sizes: number[] = [];
    await readBody(streamed([bytes(10), bytes(20)]), { maxBytes: 1000, claim: (size) => sizes.push(size) });
    expect(sizes).toEqual([10, 30]);
    const refusal = new Error("busy");
    const refused = readBody(streamed([bytes(10)]), {
      maxBytes: 1000,
      claim: () => {
        throw refusal;
      },
    });
    await expect(refused).rejects.toBe(refusal);
  });
});
