/**
 * The floor plan of src/, declared once: each folder, what it is for, and the folders it may import. From it come
 * the lint rules that hold it (biome.json's overrides) and the module diagram in docs/architecture.md; a test
 * checks both are current and that the code's imports keep to it. `npm run layout` rewrites them.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, normalize, relative, resolve } from "node:path";

export interface Floor {
  readonly folder: string;
  readonly says: string;
  /** The folders its files may import, each through its `index.ts`. */
  readonly uses: readonly string[];
}

/** From the ground up: a folder uses only folders listed before it. */
export const FLOORS: readonly Floor[] = [
  { folder: "config", says: "settings, their docs, the operator's errors", uses: [] },
  { folder: "contract", says: "the event model, /batch/ errors, JSON as read", uses: [] },
  { folder: "telemetry", says: "logs, metrics, observers and their types", uses: ["config", "contract"] },
  { folder: "engine", says: "chDB in this process: unpack, start, stdin, holder", uses: [] },
  { folder: "storage", says: "the ClickHouse client, SQL literals, the schema, backups", uses: ["config", "engine"] },
  { folder: "identity", says: "distinct IDs to persons, from facts", uses: ["contract", "storage", "telemetry"] },
  {
    folder: "write",
    says: "group commit and the flush",
    uses: ["config", "contract", "identity", "storage", "telemetry"],
  },
  { folder: "capture", says: "a batch's head, payload and events checked", uses: ["config", "contract"] },
  {
    folder: "http",
    says: "the listeners: /batch/, /health, CORS, /metrics, the admin door",
    uses: ["capture", "config", "contract", "telemetry"],
  },
  {
    folder: "query",
    says: "the query port: ClickHouse's HTTP interface",
    uses: ["config", "engine", "http", "storage", "telemetry"],
  },
  {
    folder: "import",
    says: "files of events: read, map, send",
    uses: ["capture", "config", "contract", "engine", "write"],
  },
  {
    folder: "cli",
    says: "ingest query, import, backup, restore, forget",
    uses: ["config", "engine", "import", "query", "storage", "telemetry", "write"],
  },
];

const ROOT = resolve(import.meta.dir, "..");
const SRC = join(ROOT, "src");

/** Relative imports of a TypeScript file (`import`, `export … from`, dynamic `import()`), as written. */
export function importsOf(text: string): string[] {
  const found = text.matchAll(
    /(?:^|\n)\s*(?:import|export)\b[^"'`;]*?\bfrom\s*["'](\.{1,2}\/[^"']*)["']|\bimport\(\s*["'](\.{1,2}\/[^"']*)["']\s*\)/g,
  );
  return [...found].map((match) => (match[1] ?? match[2])!);
}

/** Every source file of src/, as a path from src/. */
export function sourceFiles(): string[] {
  return readdirSync(SRC, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .sort();
}

/** The file an import names, as a path from src/: `x.ts` or `x/index.ts`. */
function target(from: string, spec: string, files: ReadonlySet<string>): string | undefined {
  const base = normalize(join(dirname(from), spec));
  return [`${base}.ts`, `${base}/index.ts`, base].find((candidate) => files.has(candidate));
}

/** src/'s import graph, file to files, from src/. */
export function importGraph(): Map<string, string[]> {
  const files = sourceFiles();
  const known = new Set(files);
  return new Map(
    files.map((file) => [
      file,
      importsOf(readFileSync(join(SRC, file), "utf8")).flatMap((spec) => target(file, spec, known) ?? []),
    ]),
  );
}

/** The top-level folder a file of src/ is in; the file itself when it is at the top (main.ts). */
export const folderOf = (file: string): string => file.split("/")[0]!;

/** The loops of `graph` (Tarjan's strongly connected components with more than one file, or a file importing itself). */
export function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    for (let member = stack.pop()!; ; member = stack.pop()!) {
      onStack.delete(member);
      component.push(member);
      if (member === node) break;
    }
    if (component.length > 1 || graph.get(node)?.includes(node)) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** Imports that break the plan: into a folder not in the importer's `uses`, or past another folder's index.ts. */
export function breaches(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const uses = new Map(FLOORS.map((floor) => [floor.folder, new Set(floor.uses)]));
  const found: string[] = [];
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    for (const to of targets) {
      const into = folderOf(to);
      if (into === from) continue;
      if (from !== "main.ts" && !uses.get(from)?.has(into))
        found.push(`${file} → ${to}: ${from}/ does not use ${into}/`);
      if (to !== `${into}/index.ts`) found.push(`${file} → ${to}: past ${into}/index.ts`);
    }
  }
  return found;
}

type Override = Record<string, unknown>;

/**
 * biome.json's overrides: for each folder's files (at its top and one level down), the folders it may not import
 * and any path past another folder's index.ts.
 */
export function biomeOverrides(): Override[] {
  const overrides: Override[] = [];
  for (const floor of FLOORS) {
    const others = FLOORS.map((other) => other.folder).filter((other) => other !== floor.folder);
    const forbidden = others.filter((other) => !floor.uses.includes(other));
    for (const depth of [1, 2]) {
      const up = "../".repeat(depth);
      const patterns = [
        ...(forbidden.length === 0
          ? []
          : [
              {
                group: forbidden.flatMap((other) => [`${up}${other}`, `${up}${other}/**`]),
                message: `${floor.folder}/ uses ${floor.uses.length === 0 ? "no other folder" : `only ${floor.uses.map((u) => `${u}/`).join(", ")}`} (scripts/layout.ts; docs/architecture.md#the-layout).`,
              },
            ]),
        {
          group: [`${up}*/**`],
          message: "Another folder is entered through its index.ts (scripts/layout.ts).",
        },
      ];
      overrides.push({
        includes: [`src/${floor.folder}/${"*/".repeat(depth - 1)}*.ts`],
        linter: { rules: { style: { noRestrictedImports: { level: "error", options: { patterns } } } } },
      });
    }
  }
  overrides.push({
    includes: ["src/main.ts"],
    linter: {
      rules: {
        style: {
          noRestrictedImports: {
            level: "error",
            options: {
              patterns: [
                { group: ["./*/**"], message: "A folder is entered through its index.ts (scripts/layout.ts)." },
              ],
            },
          },
        },
      },
    },
  });
  return overrides;
}

const DIAGRAM_START = "<!-- layout: start (npm run layout writes this) -->";
const DIAGRAM_END = "<!-- layout: end -->";

/** The module diagram: one box a folder, an arrow for each folder it imports (as the code does, not as allowed). */
export function diagram(graph: ReadonlyMap<string, readonly string[]>): string {
  const edges = new Set<string>();
  for (const [file, targets] of graph) {
    for (const to of targets) {
      const [from, into] = [folderOf(file).replace(/\.ts$/, ""), folderOf(to)];
      if (from !== into) edges.add(`  ${from} --> ${into}`);
    }
  }
  const boxes = FLOORS.map((floor) => `  ${floor.folder}["${floor.folder}/<br/>${floor.says}"]`);
  return ["```mermaid", "flowchart TD", '  main["main.ts"]', ...boxes.reverse(), ...[...edges].sort(), "```"].join(
    "\n",
  );
}

/** `text` with the diagram between its markers replaced by `current`. */
export function withDiagram(text: string, current: string): string {
  const start = text.indexOf(DIAGRAM_START);
  const end = text.indexOf(DIAGRAM_END);
  if (start < 0 || end < start) throw new Error(`docs/architecture.md has no ${DIAGRAM_START} … ${DIAGRAM_END}`);
  return `${text.slice(0, start + DIAGRAM_START.length)}\n${current}\n${text.slice(end)}`;
}

export function withOverrides(biome: string): string {
  const config = JSON.parse(biome) as Record<string, unknown>;
  config.overrides = biomeOverrides();
  return `${JSON.stringify(config, null, 2)}\n`;
}

if (import.meta.main) {
  const architecture = join(ROOT, "docs/architecture.md");
  writeFileSync(architecture, withDiagram(readFileSync(architecture, "utf8"), diagram(importGraph())));
  const biome = join(ROOT, "biome.json");
  writeFileSync(biome, withOverrides(readFileSync(biome, "utf8")));
  // in Biome's own layout, so that `npm run check` finds it formatted
  Bun.spawnSync([join(ROOT, "node_modules/.bin/biome"), "format", "--write", "biome.json"], { cwd: ROOT });
  console.log(`wrote ${relative(ROOT, architecture)} and ${relative(ROOT, biome)}`);
}
