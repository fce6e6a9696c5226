import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SERVICE_VERSION } from "../../src/config";
import { backupChain, compareVersions, incompatibility, MANIFEST } from "../../src/storage";
import { SCHEMA_VERSION } from "../../src/storage/schema";
import { scratchDir } from "../helpers/scratch";

// What makes a directory a backup, and which backups this version restores: read without an engine.

const manifest = (id: string, base: { name: string; id: string } | null, extra: object = {}) => ({
  format: 1,
  service: SERVICE_VERSION,
  schema: SCHEMA_VERSION,
  engine: "26.7.2.1",
  database: "analytics",
  id,
  base,
  started: "2026-11-01T00:00:00.000Z",
  seconds: 1,
  tables: {},
  bytes: 1,
  ...extra,
});

function write(dir: string, content: object): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, MANIFEST), JSON.stringify(content));
  return dir;
}

describe("backupChain", () => {
  test("an incremental backup's bases, by name beside it and by id", () => {
    const root = scratchDir("ingest-chain-");
    const full = write(join(root, "full"), manifest("a", null));
    const next = write(join(root, "next"), manifest("b", { name: "full", id: "a" }));
    const last = write(join(root, "last"), manifest("c", { name: "next", id: "b" }));
    expect((backupChain(last) as { dir: string }[]).map((backup) => backup.dir)).toEqual([last, next, full]);
    write(join(root, "impostor"), manifest("d", { name: "full", id: "x" }));
    expect(backupChain(join(root, "impostor"))).toBe(
      `${full} is not the backup ${join(root, "impostor")} was made on (another backup of that name)`,
    );
    write(join(root, "other"), manifest("e", { name: "full", id: "a" }, { database: "other" }));
    expect(backupChain(join(root, "other"))).toContain("is a backup of another database");
    mkdirSync(join(root, "garbled"));
    writeFileSync(join(root, "garbled", MANIFEST), "{");
    expect(backupChain(join(root, "garbled"))).toContain("is not a manifest this version of ingest reads");
  });
});

describe("incompatibility", () => {
  test("a backup of this or an older version restores; a newer service or schema, or another database, does not", () => {
    const current = manifest("a", null);
    expect(incompatibility(current as never, "/b", "analytics")).toBeUndefined();
    expect(incompatibility({ ...current, service: "0.0.1", schema: 0 } as never, "/b", "analytics")).toBeUndefined();
    expect(incompatibility({ ...current, service: "99.0.0" } as never, "/b", "analytics")).toContain(
      "newer than this ingest",
    );
    expect(incompatibility({ ...current, schema: SCHEMA_VERSION + 1 } as never, "/b", "analytics")).toContain("newer");
    expect(incompatibility(current as never, "/b", "other")).toContain("set CLICKHOUSE_DATABASE=analytics");
  });

  test("versions compare by number, part by part", () => {
    expect(compareVersions("0.10.0", "0.9.9")).toBe(1);
    expect(compareVersions("1.2.3", "1.2.3-rc.1")).toBe(0);
    expect(compareVersions("1.2", "1.2.1")).toBe(-1);
  });
});
