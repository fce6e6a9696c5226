import { type Backend, SETTINGS, type Setting } from "./settings";

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

/** The README's configuration table (`npm run docs` writes it there; a test checks it is current). */
export function settingsTable(): string {
  const rows = (Object.values(SETTINGS) as Setting<unknown>[]).map(
    (setting) =>
      `| \`${setting.env}\` | ${code(shownDefault(setting))} | ${BACKENDS[setting.backend]} | ${setting.help.replaceAll("|", "\\|")} |`,
  );
  return ["| Variable | Default | Applies to | Meaning |", "| --- | --- | --- | --- |", ...rows].join("\n");
}

function shownDefault(setting: Setting<unknown>): string {
  return setting.shownDefault ?? String(setting.default);
}

/** A default in code font, unless it is a word (none, off) or already marked up. */
const code = (text: string): string => (/^[a-z ]+$|`/.test(text) ? text : `\`${text}\``);

/** Markdown's backticks dropped, for the terminal. */
const plain = (text: string): string => text.replaceAll("`", "");
