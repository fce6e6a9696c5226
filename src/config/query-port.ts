import { availableParallelism } from "node:os";
import { type } from "arktype";
import { flag, port, positive } from "./parse";
import { setting, type Topic } from "./setting";

/**
 * The query port: ClickHouse's HTTP interface over the embedded engine, who may use it and what one query may
 * take of the machine (src/query, docs/query.md).
 */
export const QUERY_PORT = {
  queryPort: setting<number | undefined>({
    env: "QUERY_PORT",
    parse: port,
    default: undefined,
    shownDefault: "off",
    help: "Serve ClickHouse's HTTP interface over the embedded engine on this port, on `HOST`; needs `QUERY_PASSWORD`.",
    backend: "embedded",
    refusedElsewhere:
      "QUERY_PORT serves the embedded engine; with CLICKHOUSE_URL, query the server's own HTTP interface instead",
  }),
  queryUser: setting({
    env: "QUERY_USER",
    parse: type("string"),
    default: "default",
    help: "The user the query port accepts.",
    backend: "embedded",
  }),
  queryPassword: setting({
    env: "QUERY_PASSWORD",
    parse: type("string"),
    default: "",
    shownDefault: "none",
    help: "The query port's password (required with `QUERY_PORT`).",
    backend: "embedded",
    redact: "omit",
  }),
  queryReadonly: setting({
    env: "QUERY_READONLY",
    parse: flag,
    default: true,
    shownDefault: "`1`",
    help: "`1`: queries may only read. `0`: a POST may also insert, create, alter and drop tables (not the definitions of the service's own tables).",
    backend: "embedded",
  }),
  queryTimeoutS: setting({
    env: "QUERY_TIMEOUT_S",
    parse: positive,
    default: 30,
    help: "Longest a query may run (`max_execution_time`).",
    backend: "embedded",
  }),
  queryConcurrency: setting({
    env: "QUERY_CONCURRENCY",
    parse: positive,
    default: 2,
    help: "Most queries running at once; more wait up to 10 s, then get `TOO_MANY_SIMULTANEOUS_QUERIES`.",
    backend: "embedded",
  }),
  queryMaxThreads: setting({
    env: "QUERY_MAX_THREADS",
    parse: positive,
    default: () => Math.max(1, Math.floor(availableParallelism() / 2)),
    shownDefault: "half the cores, at least 1",
    help: "Most threads one query uses (`max_threads`), so that ingest keeps the rest.",
    backend: "embedded",
  }),
  queryMaxMemoryMiB: setting({
    env: "QUERY_MAX_MEMORY_MIB",
    parse: positive,
    default: 1024,
    help: "Most memory one query may use (`max_memory_usage`).",
    backend: "embedded",
  }),
  queryMaxResultMiB: setting({
    env: "QUERY_MAX_RESULT_MIB",
    parse: positive,
    default: 1024,
    help: "Largest result one query may return (`max_result_bytes`, before compression).",
    backend: "embedded",
  }),
} as const satisfies Topic;
