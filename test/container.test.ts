import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./helpers/process";

// No Docker engine runs on these machines, so the container files are checked with what does run here:
// dockerfile-utils (npm) lints the Dockerfile; docker-compose (Debian's, v1) validates and normalises compose.yaml.

const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8");

test("the Dockerfile lints clean (dockerfile-utils)", () => {
  const lint = Bun.spawnSync([join(ROOT, "node_modules", ".bin", "dockerfile-utils"), "lint", "Dockerfile"], {
    cwd: ROOT,
  });
  expect({ exitCode: lint.exitCode, output: lint.stdout.toString() + lint.stderr.toString() }).toEqual({
    exitCode: 0,
    output: "",
  });
});

test("the Dockerfile builds the executable in one stage and runs it alone, as a non-root user, as PID 1", () => {
  const stages = dockerfile.split(/^FROM /m).slice(1);
  expect(stages).toHaveLength(2);
  expect(stages[0]).toContain("RUN npm run build");
  const final = stages[1]!;
  expect(final).toMatch(/^debian:bookworm-slim/);
  expect(final).toContain("COPY --from=build /src/dist/ingest /usr/local/bin/ingest");
  expect(final).toMatch(/^USER ingest$/m);
  expect(final).toMatch(/useradd --system --uid 10001/);
  expect(final).toMatch(/^HEALTHCHECK .*CMD \["\/usr\/local\/bin\/ingest", "--health-check"\]$/m);
  expect(final).toMatch(/^ENTRYPOINT \["\/usr\/local\/bin\/ingest"\]$/m); // exec form: signals reach it
  expect(final).not.toMatch(/node|bun/i); // nothing but the executable
});

/** docker-compose, installed from Debian when missing and possible, or why the check is skipped. */
function dockerCompose(): string | { skipped: string } {
  const path = "/usr/bin/docker-compose";
  if (!existsSync(path) && process.getuid?.() === 0) {
    Bun.spawnSync(["apt-get", "install", "-y", "docker-compose"], {
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
  }
  return existsSync(path) ? path : { skipped: "docker-compose is not installed and could not be" };
}
const compose = dockerCompose();
if (typeof compose !== "string") console.log(`container: compose check skipped: ${compose.skipped}`);

test.skipIf(typeof compose !== "string")(
  "compose.yaml is valid: ClickHouse LTS with a data volume, the service waiting for it to be healthy",
  () => {
    const config = (env: Record<string, string>) =>
      Bun.spawnSync([compose as string, "-f", "compose.yaml", "config"], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", ...env },
      });
    const valid = config({ PUBLIC_API_KEYS: "phc_x" });
    expect(valid.exitCode).toBe(0);
    const normalised = valid.stdout.toString();
    expect(normalised).toContain("image: clickhouse/clickhouse-server:26.8");
    expect(normalised).toContain("clickhouse-data:/var/lib/clickhouse:rw");
    expect(normalised).toMatch(/depends_on:\n\s+clickhouse:\n\s+condition: service_healthy/);
    expect(normalised).toContain("CLICKHOUSE_URL: http://clickhouse:8123");
    // the api keys are required, not defaulted
    const missing = config({});
    expect(missing.exitCode).not.toBe(0);
    expect(missing.stderr.toString()).toContain("set PUBLIC_API_KEYS");
  },
);
