/**
 * `npm run build`: one executable, dist/ingest, that needs no Node, no Bun and no node_modules.
 *
 * `bun build --compile` bundles the service; a plugin replaces chDB's native loader (which would look for
 * node_modules/@chdb/lib-<platform> at run time) with one that carries the addon and libchdb.so inside the
 * executable, with their SHA-256 digests, and unpacks them on first use (src/engine/unpack.ts).
 */
import { join, resolve } from "node:path";
import type { BunPlugin } from "bun";

const ROOT = resolve(import.meta.dir, "..");
const OUTFILE = join(ROOT, "dist", "ingest");
const NATIVE_PACKAGES: Record<string, string> = {
  "linux-x64": "@chdb/lib-linux-x64-gnu",
  "linux-arm64": "@chdb/lib-linux-arm64-gnu",
};

const nativePackage = NATIVE_PACKAGES[`${process.platform}-${process.arch}`];
if (nativePackage === undefined) throw new Error(`no chDB build for ${process.platform}-${process.arch}`);
const nativeDir = join(ROOT, "node_modules", nativePackage);

async function describe(name: string) {
  const path = join(nativeDir, name);
  const hasher = new Bun.CryptoHasher("sha256");
  for await (const chunk of Bun.file(path).stream()) hasher.update(chunk);
  return { name, path, sha256: hasher.digest("hex"), size: Bun.file(path).size };
}

const files = [await describe("libchdb.so"), await describe("chdb_node.node")];

const unpack = join(ROOT, "src", "engine", "unpack.ts");

/**
 * Two modules replaced: src/engine/files.ts gets the engine files, embedded, with their digests; and
 * chDB's dist/loader.js keeps its exports but loads the addon from where the service unpacked it.
 */
const embedEngine: BunPlugin = {
  name: "embedded-chdb",
  setup(build) {
    build.onLoad({ filter: /[\\/]src[\\/]engine[\\/]files\.ts$/ }, () => ({
      loader: "ts",
      contents: [
        ...files.map((file, i) => `import file${i} from ${JSON.stringify(file.path)} with { type: "file" };`),
        `export const embeddedFiles = [${files
          .map((f, i) => `{ name: "${f.name}", embeddedPath: file${i}, sha256: "${f.sha256}", size: ${f.size} }`)
          .join(", ")}];`,
      ].join("\n"),
    }));
    build.onLoad({ filter: /[\\/]chdb[\\/]dist[\\/]loader\.js$/ }, () => ({
      loader: "ts",
      contents: [
        `import { loadEmbeddedAddon } from ${JSON.stringify(unpack)};`,
        "let cached;",
        'export function platformKey() { return process.platform + "-" + process.arch; }',
        "export function loadNative() { return (cached ??= loadEmbeddedAddon()); }",
      ].join("\n"),
    }));
  },
};

const started = performance.now();
const result = await Bun.build({
  entrypoints: [join(ROOT, "src", "main.ts")],
  compile: { outfile: OUTFILE },
  minify: { syntax: true, whitespace: true },
  sourcemap: "none",
  plugins: [embedEngine],
});
if (!result.success) {
  for (const log of result.logs) console.error(String(log));
  process.exit(1);
}
const size = Bun.file(OUTFILE).size;
console.log(
  `built ${OUTFILE}: ${(size / 2 ** 20).toFixed(0)} MiB in ${((performance.now() - started) / 1000).toFixed(1)} s ` +
    `(embeds ${files.map((file) => `${file.name} ${file.sha256.slice(0, 12)}`).join(", ")})`,
);
