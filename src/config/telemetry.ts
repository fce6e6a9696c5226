import { type } from "arktype";
import { port } from "./parse";
import { setting, type Topic } from "./setting";

/** Log levels, least to most severe. */
export const LEVELS = ["debug", "info", "warn", "error"] as const;
export type Level = (typeof LEVELS)[number];

/** Telemetry: what is logged, and where metrics are served (src/telemetry). */
export const TELEMETRY = {
  logLevel: setting<Level>({
    env: "LOG_LEVEL",
    parse: type.enumerated(...LEVELS),
    default: "info",
    help: `${LEVELS.map((level) => `\`${level}\``).join(", ")}: JSON lines on stdout.`,
    backend: "any",
  }),
  metricsPort: setting<number | undefined>({
    env: "METRICS_PORT",
    parse: port,
    default: undefined,
    shownDefault: "off",
    help: "Serve Prometheus metrics at `GET /metrics` on this port, on `HOST` (0 picks a free one).",
    backend: "any",
  }),
  diskWarnPercent: setting({
    env: "DISK_WARN_PERCENT",
    parse: type("string.numeric.parse").to("0 <= number <= 100"),
    default: 10,
    help: "Log a warning while the disk the tables are on has less than this percent free (checked each minute); 0: never.",
    backend: "any",
  }),
} as const satisfies Topic;
