import { statSync } from "node:fs";
import { detachStdin } from "../../engine";
import { ImportError } from "../errors";

/** What a source yields: its bytes, inflated when it was gzip. */
export interface Source {
  readonly name: string;
  readonly bytes: ReadableStream<Uint8Array>;
  readonly gzip: boolean;
  /** Bytes of the file (as stored, before inflating) read so far. */
  readonly bytesRead: () => number;
}

/** The size of a file to import, checked to be one: an `ImportError` saying why it is not. */
export function sizeOf(path: string): number {
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(path);
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw new ImportError(code === "ENOENT" ? `${path}: no such file` : `${path}: ${(error as Error).message}`);
  }
  if (stat.isDirectory()) throw new ImportError(`${path} is a directory, not a file`);
  return stat.size;
}

const GZIP_MAGIC = [0x1f, 0x8b] as const;

/**
 * Opens a file, or standard input for `-`, and inflates it when it starts with gzip's magic bytes, whatever its
 * name. Streams: nothing is read ahead beyond the first chunk.
 */
export async function openSource(path: string): Promise<Source> {
  if (path !== "-") sizeOf(path);
  const raw = path === "-" ? detachedStdin() : Bun.file(path).stream();
  const reader = raw.getReader();
  const first = await reader.read();
  const head = first.done ? new Uint8Array() : first.value;
  let bytesRead = head.length;
  const gzip = head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1];
  const replayed = new ReadableStream<Uint8Array>({
    start(controller) {
      if (head.length > 0) controller.enqueue(head);
      if (first.done) controller.close();
    },
    async pull(controller) {
      const next = await reader.read();
      if (next.done) controller.close();
      else {
        bytesRead += next.value.length;
        controller.enqueue(next.value);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
  // (TypeScript's DOM types declare the decompressor's input as BufferSource, which Uint8Array is)
  const inflate = new DecompressionStream("gzip") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>;
  const bytes = gzip ? replayed.pipeThrough(inflate) : replayed;
  return { name: path === "-" ? "stdin" : path, bytes, gzip, bytesRead: () => bytesRead };
}

/** Standard input, read from where `detachStdin` moved it (the embedded engine must find nothing on it). */
function detachedStdin(): ReadableStream<Uint8Array> {
  const fd = detachStdin();
  if (fd === undefined) throw new ImportError("standard input is closed");
  return Bun.file(fd).stream();
}
