import { expect, test } from "bun:test";
import { fail } from "../../src/contract/errors";
import {
  describeError,
  Logger,
  Metrics,
  requestObserver,
  SLOW_FLUSH_SECONDS,
  storageObserver,
} from "../../src/telemetry";

function capture(level: "debug" | "info" | "warn" | "error" = "info") {
  const lines: Record<string, unknown>[] = [];
  return { lines, log: new Logger(level, (line) => lines.push(JSON.parse(line))) };
}

test("one JSON object per line, with time, level and message; below LOG_LEVEL nothing is written", () => {
  const { lines, log } = capture("warn");
  log.info("quiet");
  log.warn("loud", { events: 3 });
  expect(lines).toEqual([{ time: expect.any(String), level: "warn", msg: "loud", events: 3 }]);
  expect(Number.isNaN(Date.parse(lines[0]!.time as string))).toBe(false);
});

test("a ClickHouse error is logged by type and code only: its message quotes the rows it failed on", () => {
  const clickhouse = Object.assign(new Error("Cannot parse input: before: 'secret-payload'"), {
    type: "CANNOT_PARSE_INPUT_ASSERTION_FAILED",
    code: "27",
  });
  expect(describeError(clickhouse)).toEqual({
    error: "Error",
    type: "CANNOT_PARSE_INPUT_ASSERTION_FAILED",
    code: "27",
  });
  expect(describeError(new RangeError("Maximum call stack size exceeded."))).toEqual({
    error: "RangeError",
    message: "Maximum call stack size exceeded.",
  });
});

test("write failures are logged with their cause, slow flushes as warnings; both counted", async () => {
  const { lines, log } = capture();
  const metrics = new Metrics();
  const observer = storageObserver(log, metrics);
  const phases = { identity: 0.001, facts: 0.001, persons: 0.002, links: 0.003, events: 0.004 };
  const rows = {
    identity_facts: 3,
    group_facts: 0,
    persons: 2,
    groups: 0,
    person_overrides: 0,
    person_distinct_ids: 1,
  };
  observer.flushed(100, 0.01, phases, rows);
  observer.flushed(5_000, SLOW_FLUSH_SECONDS + 0.5, phases, rows);
  observer.flushFailed(
    20,
    0.2,
    Object.assign(new Error("disk full at 'row data'"), { type: "NOT_ENOUGH_SPACE", code: "243" }),
  );
  expect(lines.map(({ time, ...rest }) => rest)).toEqual([
    { level: "warn", msg: "slow flush", events: 5_000, seconds: SLOW_FLUSH_SECONDS + 0.5, phases },
    {
      level: "error",
      msg: "write failed",
      events: 20,
      seconds: 0.2,
      cause: { error: "Error", type: "NOT_ENOUGH_SPACE", code: "243" },
    },
  ]);
  const text = await metrics.text();
  expect(text).toContain("ingest_insert_errors_total 1");
  expect(text).toContain("ingest_flush_events_count 2");
  expect(text).toContain("ingest_flush_duration_seconds_count 3");
  expect(text).toContain('ingest_flush_phase_seconds_count{phase="events"} 2');
  expect(text).toContain('ingest_flush_phase_seconds_sum{phase="links"} 0.006');
  expect(text).toContain('ingest_rows_written_total{table="identity_facts"} 6');
  expect(text).not.toContain('ingest_rows_written_total{table="groups"}');
});

test("a 5xx is logged with its cause when it has one; a busy refusal has none to log", () => {
  const { lines, log } = capture();
  const observer = requestObserver(log, new Metrics());
  const answer = { method: "POST", path: "/batch/", route: "batch" as const, bytes: 10 };
  observer.answered({ ...answer, status: 503, failure: fail.busy() });
  observer.answered({ ...answer, status: 500, failure: fail.internal(new RangeError("boom")) });
  expect(lines.map(({ msg, status, code, cause }) => ({ msg, status, code, cause }))).toEqual([
    { msg: "request failed", status: 503, code: "busy", cause: undefined },
    { msg: "request failed", status: 500, code: "internal", cause: { error: "RangeError", message: "boom" } },
  ]);
});
