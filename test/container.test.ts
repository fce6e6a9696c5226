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
  expect(final).toMatch(/^WORKDIR \/import$/m); // writable by that user: where `ingest import` keeps its checkpoint
  expect(final).toMatch(/chown ingest:ingest .*\/import/);
  expect(final).toMatch(/useradd --system --uid 10001/);
  expect(final).toMatch(/^HEALTHCHECK .*CMD \["\/usr\/local\/bin\/ingest", "--health-check"\]$/m);
  expect(final).toMatch(/^ENTRYPOINT \["\/usr\/local\/bin\/ingest"\]$/m); // exec form: signals reach it
  expect(final).not.toMatch(/node|bun/i); // nothing but the executable
});

/** A Debian tool, installed when missing and possible (as root), or why the checks that need it are skipped. */
function debianTool(path: string, pkg: string): string | { skipped: string } {
  if (!existsSync(path) && process.getuid?.() === 0) {
    Bun.spawnSync(["apt-get", "install", "-y", pkg], { env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  }
  if (existsSync(path)) return path;
  const skipped = `${pkg} is not installed and could not be`;
  console.log(`container: checks that need ${pkg} skipped: ${skipped}`);
  return { skipped };
}
const compose = debianTool("/usr/bin/docker-compose", "docker-compose");
const haproxy = debianTool("/usr/sbin/haproxy", "haproxy");
const xmllint = debianTool("/usr/bin/xmllint", "libxml2-utils");

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

interface ComposeService {
  image?: string;
  hostname?: string;
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  ports?: unknown[];
  volumes?: string[];
}

/** compose.cluster.yaml as docker-compose normalises it, or its exit status and complaint. */
function clusterCompose(env: Record<string, string>) {
  const run = Bun.spawnSync([compose as string, "-f", "compose.cluster.yaml", "config"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", ...env },
  });
  const config =
    run.exitCode === 0
      ? (Bun.YAML.parse(run.stdout.toString()) as { services: Record<string, ComposeService> })
      : undefined;
  return { exitCode: run.exitCode, stderr: run.stderr.toString(), services: config?.services ?? {} };
}

const CLUSTER_FILES = join(ROOT, "deploy", "cluster");

test.skipIf(typeof compose !== "string")(
  "compose.cluster.yaml is valid: Keeper, two ClickHouse nodes, two instances each on its own node, HAProxy in front",
  () => {
    const { exitCode, services } = clusterCompose({ PUBLIC_API_KEYS: "phc_x", CLUSTER_SECRET: "s" });
    expect(exitCode).toBe(0);
    expect(Object.keys(services).sort()).toEqual(
      ["clickhouse-1", "clickhouse-2", "ingest-1", "ingest-2", "keeper", "load-balancer"].sort(),
    );
    expect(services.keeper?.image).toBe("clickhouse/clickhouse-keeper:26.8");
    expect(services["load-balancer"]?.image).toBe("haproxy:3.2");
    expect(services["load-balancer"]?.ports).toHaveLength(1);

    // the cluster the instances name is the one the nodes define; each node its own replica macro and hostname
    const nodeConfig = readFileSync(join(CLUSTER_FILES, "clickhouse.xml"), "utf8");
    const cluster = /<remote_servers>\s*<([\w.-]+)>/.exec(nodeConfig)?.[1];
    const hosts = [...nodeConfig.matchAll(/<host>([\w.-]+)<\/host>/g)].map((match) => match[1]);
    expect(hosts).toEqual(["keeper", "clickhouse-1", "clickhouse-2"]);
    for (const node of ["clickhouse-1", "clickhouse-2"]) {
      expect(services[node]?.image).toBe("clickhouse/clickhouse-server:26.8");
      expect(services[node]?.hostname).toBe(node);
      expect(services[node]?.environment?.REPLICA).toBe(node);
      expect(services[node]?.volumes?.[0]).toEndWith(":/etc/clickhouse-server/config.d/cluster.xml:ro");
    }
    for (const [instance, node] of [
      ["ingest-1", "clickhouse-1"],
      ["ingest-2", "clickhouse-2"],
    ] as const) {
      expect(services[instance]?.environment).toMatchObject({
        CLICKHOUSE_URL: `http://${node}:8123`,
        CLICKHOUSE_CLUSTER: cluster,
      });
      expect(services[instance]?.depends_on?.[node]).toEqual({ condition: "service_healthy" });
    }

    // the load balancer sends to both instances, and checks their health
    const balancer = readFileSync(join(CLUSTER_FILES, "haproxy.cfg"), "utf8");
    expect([...balancer.matchAll(/^\s*server (\S+) (\S+):8000/gm)].map((m) => [m[1], m[2]])).toEqual([
      ["ingest-1", "ingest-1"],
      ["ingest-2", "ingest-2"],
    ]);
    expect(balancer).toContain("option httpchk GET /health");

    // the secrets are required, not defaulted
    expect(clusterCompose({ CLUSTER_SECRET: "s" }).stderr).toContain("set PUBLIC_API_KEYS");
    expect(clusterCompose({ PUBLIC_API_KEYS: "phc_x" }).stderr).toContain("set CLUSTER_SECRET");
  },
);

test.skipIf(typeof haproxy !== "string")("the load balancer's configuration is valid to HAProxy itself", () => {
  const check = Bun.spawnSync([haproxy as string, "-c", "-f", join(CLUSTER_FILES, "haproxy.cfg")]);
  // (it warns that the instances' names do not resolve here: they resolve in the compose network)
  expect({ exitCode: check.exitCode, valid: check.stdout.toString().includes("Configuration file is valid") }).toEqual({
    exitCode: 0,
    valid: true,
  });
});

test.skipIf(typeof xmllint !== "string")("the ClickHouse and Keeper configurations are well-formed XML", () => {
  const check = Bun.spawnSync([xmllint as string, "--noout", "clickhouse.xml", "keeper.xml"], { cwd: CLUSTER_FILES });
  expect({ exitCode: check.exitCode, stderr: check.stderr.toString() }).toEqual({ exitCode: 0, stderr: "" });
});
