import { readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");

/**
 * The statements of a doc's `sql` blocks, in order, comments dropped, split at `;`. `table` names the service's
 * tables and views for the reader (a test's own database); without it they stay as the doc writes them, which is
 * right on the query port, whose current database is the service's.
 */
export function docStatements(doc: string, table: (name: string) => string = (name) => name): string[] {
  const blocks = [...readFileSync(join(ROOT, doc), "utf8").matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return blocks
    .flatMap((block) => block.replace(/--.*$/gm, "").split(";"))
    .map((statement) => statement.trim())
    .filter((statement) => statement !== "")
    .map((statement) =>
      statement.replace(
        /\b(FROM|JOIN|INTO|TABLE)\s+(events_resolved|events|persons|person_distinct_ids|sessions_mv|sessions)\b/g,
        (_, keyword: string, name: string) => `${keyword} ${table(name)}`,
      ),
    );
}
