import { existsSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type EmbeddedFile, embeddedFiles } from "./files";

/**
 * The compiled executable carries chDB's native engine inside it (`scripts/build.ts`): the addon
 * `chdb_node.node` and the 566 MB `libchdb.so` it links against. A native library cannot be loaded from inside
 * the executable, and the addon finds `libchdb.so` only beside itself (RUNPATH `$ORIGIN`), so both are unpacked
 * together, once, into a cache directory, verified against the SHA-256 digests recorded at build time, and
 * loaded from there. Later starts find them verified and load them at once. Run from source, none of this runs.
 */

const ADDON = "chdb_node.node";
const MARKER = "verified.json";
let unpackedDir: string | undefined;

/**
 * In the compiled executable: makes sure the engine is unpacked and verified under `cacheRoot`, before chDB is
 * imported. From source: does nothing.
 */
export async function prepareEmbeddedEngine(cacheRoot: string, files = embeddedFiles): Promise<void> {
  if (files === undefined) return;
  const dir = join(cacheRoot, `chdb-${files.map((file) => file.sha256.slice(0, 8)).join("")}`);
  try {
    if (!isVerified(dir, files)) await unpack(dir, files);
  } catch (error) {
    const mib = Math.round(files.reduce((sum, file) => sum + file.size, 0) / 2 ** 20);
    throw new Error(
      `Cannot unpack the embedded ClickHouse engine (${mib} MiB) into ${dir}; set CHDB_CACHE_DIR to a writable ` +
        `directory with room for it. ${(error as Error).message}`,
      { cause: error },
    );
  }
  unpackedDir = dir;
}

/** chDB's native addon, from where `prepareEmbeddedEngine` unpacked it (called by chDB's replaced loader). */
export function loadEmbeddedAddon(): unknown {
  if (unpackedDir === undefined) throw new Error("embedded engine: chDB was loaded before it was unpacked");
  const module = { exports: {} };
  process.dlopen(module, join(unpackedDir, ADDON));
  return module.exports;
}

/** Unpacked by an earlier start and verified then: the marker names these very digests and the sizes still hold. */
function isVerified(dir: string, files: readonly EmbeddedFile[]): boolean {
  const marker = join(dir, MARKER);
  if (!existsSync(marker)) return false;
  const digests = JSON.parse(readFileSync(marker, "utf8")) as Record<string, string>;
  return files.every((file) => {
    const path = join(dir, file.name);
    return digests[file.name] === file.sha256 && existsSync(path) && statSync(path).size === file.size;
  });
}

/** Streams each file out under a temporary name, checks its digest, then renames it into place (atomic). */
async function unpack(dir: string, files: readonly EmbeddedFile[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const file of files) {
    const temporary = join(dir, `.${file.name}.${process.pid}`);
    try {
      const hasher = new Bun.CryptoHasher("sha256");
      const writer = Bun.file(temporary).writer();
      for await (const chunk of Bun.file(file.embeddedPath).stream()) {
        hasher.update(chunk);
        writer.write(chunk);
      }
      await writer.end();
      const actual = hasher.digest("hex");
      if (actual !== file.sha256) throw new Error(`${file.name} unpacked with digest ${actual}, not ${file.sha256}`);
      await chmod(temporary, 0o755);
      renameSync(temporary, join(dir, file.name));
    } finally {
      rmSync(temporary, { force: true });
    }
  }
  await writeFile(join(dir, MARKER), JSON.stringify(Object.fromEntries(files.map((f) => [f.name, f.sha256]))));
}
