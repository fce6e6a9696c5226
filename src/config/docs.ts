import type { Backend, Setting } from "./setting";
import { SETTINGS } from "./settings";

/** The settings as `--help` prints them: one line each, with the default and where it applies. */
export function helpText(): string {
  const settings = Object.values(SETTINGS) as Setting<unknown>[];
  const width = Math.max(...settings.map((setting) => setting.env.length));
  return settings
    .map((setting) => {
      const where = setting.backend === "any" ? "" : `; ${setting.backend} only`;
      return `  ${setting.env.padEnd(width)}  ${plain(setting.help)} (default: ${plain(shownDefault(setting))}${where})`;
    })
    .join("\n");
}

const BACKENDS: Record<Backend, string> = { any: "both", embedded: "embedded", server: "server" };

/** The README's configuration table (`npm run docs` writes it there; test/docs.test.ts checks it is current). */
export function settingsTable(): string {
  const rows = (Object.values(SETTINGS) as Setting<unknown>[]).map((setting) => [
    `\`${setting.env}\``,
    shownDefault(setting),
    BACKENDS[setting.backend],
    setting.help.replaceAll("|", "\\|"),
  ]);
  return markdownTable(["Variable", "Default", "Applies to", "Meaning"], rows);
}

/** A Markdown table with its columns padded to their widest cell, as the formatter (Biome) leaves it. */
function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, i) => Math.max(3, title.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), line(widths.map((width) => "-".repeat(width))), ...rows.map(line)].join("\n");
}

/** The default in Markdown: a value in code font, or the table's own words for it. */
function shownDefault(setting: Setting<unknown>): string {
  return setting.shownDefault ?? `\`${String(setting.default)}\``;
}

/** Markdown's backticks dropped, for the terminal. */
const plain = (text: string): string => text.replaceAll("`", "");
