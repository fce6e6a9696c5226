import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  biomeOverrides,
  breaches,
  circles,
  diagram,
  FLOORS,
  importGraph,
  importsOf,
  sourceFiles,
  withDiagram,
} from "../scripts/layout";

// The floor plan (scripts/layout.ts) is what the code does: no import circles, no folder importing one it does not
// use or past another folder's index.ts, and the lint rules and the diagram in docs/architecture.md are its own.
// The house stays tidy: no file of src/ grows past what one reads in a sitting.

/** The most lines a file of src/ may have: past it, it is split along a seam (as config/ and identity/ were). */
const MAX_LINES = 400;

const ROOT = resolve(import.meta.dir, "..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

describe("layout", () => {
  const graph = importGraph();

  test("the import graph of src/ has no circles", () => {
    expect(circles(graph)).toEqual([]);
  });

  test("every import keeps to the plan: into a folder its floor uses, through that folder's index.ts", () => {
    expect(breaches(graph)).toEqual([]);
  });

  test("each floor uses only floors below it, and every folder of src/ has a floor", () => {
    const order = FLOORS.map((floor) => floor.folder);
    for (const floor of FLOORS) {
      for (const used of floor.uses)
        expect({ floor: floor.folder, used, below: order.indexOf(used) < order.indexOf(floor.folder) }).toMatchObject({
          below: true,
        });
    }
    const folders = readdirSync(join(ROOT, "src"), { withFileTypes: true }).filter((entry) => entry.isDirectory());
    expect(folders.map((entry) => entry.name).sort()).toEqual([...order].sort());
  });

  test("index.ts files only re-export", () => {
    for (const [file] of graph) {
      if (!file.endsWith("index.ts")) continue;
      const statements = read(`src/${file}`)
        .replace(/\{[^}]*\}/g, "{}")
        .trim()
        .split("\n");
      for (const statement of statements)
        expect({ file, statement }).toMatchObject({
          statement: expect.stringMatching(/^export (type )?(\{\}|\*) from "\.\/[\w/-]+";$/),
        });
    }
  });

  test(`no file of src/ is over ${MAX_LINES} lines`, () => {
    const long = sourceFiles().flatMap((file) => {
      const text = read(`src/${file}`);
      const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
      return lines > MAX_LINES ? [`src/${file}: ${lines} lines (at most ${MAX_LINES})`] : [];
    });
    expect(long).toEqual([]);
  });

  test("biome.json holds the plan's lint rules (npm run layout writes them)", () => {
    expect(JSON.parse(read("biome.json")).overrides).toEqual(biomeOverrides());
  });

  test("docs/architecture.md shows the modules as they import each other (npm run layout draws it)", () => {
    const doc = read("docs/architecture.md");
    expect(withDiagram(doc, diagram(graph))).toBe(doc);
  });

  test("imports are read in every form the code writes them", () => {
    const text = [
      'import { a } from "./a";',
      'import type { B } from "../b";',
      "import {\n  c,\n  d,\n} from './c';",
      'export { e } from "./e";',
      'const f = await import("./f");',
      'import { x } from "node:fs";',
    ].join("\n");
    expect(importsOf(text)).toEqual(["./a", "../b", "./c", "./e", "./f"]);
  });
});
