import { QueryError } from "./errors";

/**
 * Which settings a client may give a query (as URL parameters; `SET` and `SETTINGS` are refused by the policy).
 * Deny by default: a setting is accepted only when it is named below, or is a format setting whose value the
 * engine types as a number, a flag, a character or a word from a fixed set, or is SQL-valued and its SQL passes
 * the policy (`SQL_VALUED`). Everything else is refused, among them what reaches beyond the database or the
 * port's limits: paths and URLs (`format_schema`, `input_format_record_errors_file_path`,
 * `format_avro_schema_registry_url`), introspection, logging (`send_logs_level`), thread priorities
 * (`os_thread_priority`, `priority`), quotas and access (`readonly`, `allow_ddl`).
 * See docs/query.md#settings.
 */

/** What every query on the port runs within. */
export interface QueryLimits {
  readonly timeoutS: number;
  readonly maxMemoryBytes: number;
  readonly maxResultBytes: number;
  readonly maxThreads: number;
}

/**
 * How large a statement's syntax tree may be: the engine's defaults, which the port sets on every session so that
 * a client may only lower them. A larger tree costs the process's stack and memory as the engine parses and the
 * policy walks it (a client could raise them to 1e8 before).
 */
export const AST_LIMITS = {
  max_ast_depth: 1000,
  max_ast_elements: 50_000,
  max_expanded_ast_elements: 500_000,
} as const;

/** Limits the port sets: a client may lower them, never raise or remove them (0 means no limit). */
const LOWER_ONLY: Readonly<Record<string, (limits: QueryLimits) => number>> = {
  max_execution_time: (limits) => limits.timeoutS,
  max_memory_usage: (limits) => limits.maxMemoryBytes,
  max_result_bytes: (limits) => limits.maxResultBytes,
  max_threads: (limits) => limits.maxThreads,
  ...Object.fromEntries(Object.entries(AST_LIMITS).map(([name, limit]) => [name, () => limit])),
};

/** What a limit does past it: stop with an error or with what it has; never go on. */
const OVERFLOW_MODES = /^(throw|break)$/;

/**
 * Whether a statement waits for the mutations it starts: never 0, which would leave them running in the background
 * with no client, outside the port's limits (mutations.ts). 1 and 2 are alike on one engine.
 */
const WAITS_FOR_MUTATIONS = new Set(["mutations_sync", "alter_sync", "lightweight_deletes_sync"]);

/**
 * Settings a client may set to any value the engine takes, grouped by why that is safe. None reads or writes
 * anything but the query's own tables and result, nor raises a limit above the port's.
 */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  // Limits the port leaves unset: a client can only bound its own query further.
  "bound the query further": [
    "max_result_rows",
    "max_rows_to_read",
    "max_bytes_to_read",
    "max_rows_to_group_by",
    "max_rows_to_sort",
    "max_bytes_to_sort",
    "max_rows_in_distinct",
    "max_bytes_in_distinct",
    "max_rows_in_join",
    "max_bytes_in_join",
    "max_rows_in_set",
    "max_bytes_in_set",
    "max_columns_to_read",
    "max_temporary_columns",
    "timeout_before_checking_execution_speed",
    "min_execution_speed",
    "max_execution_speed",
    "max_estimated_execution_time",
    "result_overflow_mode",
    "timeout_overflow_mode",
    "read_overflow_mode",
    "group_by_overflow_mode",
    "sort_overflow_mode",
    "distinct_overflow_mode",
    "join_overflow_mode",
    "set_overflow_mode",
    "transfer_overflow_mode",
    "cancel_http_readonly_queries_on_client_close",
  ],
  // How blocks are cut: memory stays within max_memory_usage whatever the size.
  "shape the blocks": [
    "max_block_size",
    "preferred_block_size_bytes",
    "max_insert_block_size",
    "min_insert_block_size_rows",
    "min_insert_block_size_bytes",
  ],
  // What a query means, over the tables it may already read.
  "change what the query computes": [
    "join_use_nulls",
    "join_algorithm",
    "joined_subquery_requires_alias",
    "any_join_distinct_right_table_keys",
    "join_default_strictness",
    "extremes",
    "totals_mode",
    "totals_auto_threshold",
    "aggregate_functions_null_for_empty",
    "transform_null_in",
    "cast_keep_nullable",
    "enable_analyzer",
    "allow_experimental_analyzer",
    "prefer_column_name_to_alias",
    "count_distinct_implementation",
    "union_default_mode",
    "enable_positional_arguments",
    "final",
    "do_not_merge_across_partitions_select_final",
    "limit",
    "offset",
    "session_timezone",
    "use_variant_as_common_type",
    "cast_string_to_dynamic_use_inference",
    "describe_include_subcolumns",
    "describe_compact_output",
    "describe_include_virtual_columns",
    "show_table_uuid_in_table_create_query_if_not_nil",
    "use_skip_indexes",
    "force_primary_key",
    "force_index_by_date",
    "optimize_read_in_order",
    "optimize_aggregation_in_order",
    "optimize_move_to_prewhere",
    "optimize_use_projections",
    "date_time_overflow_behavior",
    "allow_suspicious_low_cardinality_types",
    "allow_suspicious_variant_types",
    "allow_suspicious_types_in_group_by",
    "allow_suspicious_types_in_order_by",
    "allow_experimental_object_type",
    "allow_experimental_variant_type",
    "allow_experimental_dynamic_type",
    "allow_experimental_json_type",
    "enable_json_type",
    "enable_variant_type",
    "enable_dynamic_type",
    "allow_experimental_time_time64_type",
    "enable_time_time64_type",
    "allow_nullable_key",
    "allow_create_index_without_type",
    "flatten_nested",
    "rows_before_aggregation",
    "http_write_exception_in_output_format",
    "log_comment",
  ],
  // How a write of the port's writable mode is done; it writes nothing the statement did not name.
  "shape a write": [
    "insert_null_as_default",
    "optimize_on_insert",
    "type_json_skip_duplicated_paths",
    "insert_deduplicate",
    "insert_deduplication_token",
    "async_insert",
    "wait_for_async_insert",
    "async_insert_busy_timeout_ms",
    "insert_quorum",
    "insert_quorum_timeout",
    "insert_quorum_parallel",
    "select_sequential_consistency",
    "mutations_sync",
    "alter_sync",
    "lightweight_deletes_sync",
    "max_partitions_per_insert_block",
    "throw_on_max_partitions_per_insert_block",
    "database_atomic_wait_for_drop_and_detach_synchronously",
    "enable_lightweight_delete",
    "allow_experimental_lightweight_delete",
  ],
};

const NAMED = new Set(Object.values(ALLOWED).flat());

/** Format settings are open to clients by the family: how values are read and written, nothing else. */
const FORMAT_FAMILY = /^(output_format_|input_format_|format_|date_time_)/;

/** Value types of format settings that cannot name a path, a URL, a schema or SQL. */
const PLAIN_TYPES =
  /^(Bool|U?Int\d*|Float\d*|Double|Char|Seconds|Milliseconds|UInt64Auto|MaxThreads|[A-Z]\w*(Mode|Rule|Method|Format|Behavior|Compression|Version|Kind|Type|Codec|Level|Charset))$/;

/** String-valued format settings that are delimiters or the text of NULL. */
const PLAIN_STRINGS = new Set([
  "format_csv_null_representation",
  "format_tsv_null_representation",
  "format_custom_escaping_rule",
  "format_custom_field_delimiter",
  "format_custom_row_before_delimiter",
  "format_custom_row_after_delimiter",
  "format_custom_row_between_delimiter",
  "format_custom_result_before_delimiter",
  "format_custom_result_after_delimiter",
  "format_regexp",
]);

/** Format settings that evaluate SQL in the data, so that an insert's rows could call any function. */
const EVALUATES_SQL = new Set([
  "input_format_values_interpret_expressions",
  "input_format_values_deduce_templates_of_expressions",
  "input_format_values_accurate_types_of_literals",
]);

/**
 * Settings whose values are SQL that the engine adds to a query (a filter on each table read, or on the result):
 * allowed only once that SQL passes the same policy as a query (`QueryEngine`), never as they come.
 */
export const SQL_VALUED = new Set(["additional_table_filters", "additional_result_filter"]);

/** Each setting the engine knows, with the type of its value (`system.settings`). */
export type SettingTypes = ReadonlyMap<string, string>;

/** Whether a client may set `name` (to a value the engine then checks), by the rules above. */
function isAllowedSetting(name: string, types: SettingTypes): boolean {
  if (NAMED.has(name) || name in LOWER_ONLY || SQL_VALUED.has(name)) return types.has(name);
  if (!FORMAT_FAMILY.test(name) || EVALUATES_SQL.has(name)) return false;
  const type = types.get(name);
  return type !== undefined && (PLAIN_TYPES.test(type) || PLAIN_STRINGS.has(name));
}

/** Refuses a setting that is not allowed, or a limit raised above the port's. */
export function checkSettings(
  settings: Readonly<Record<string, string>>,
  limits: QueryLimits,
  types: SettingTypes,
  readonly: boolean,
): void {
  for (const [name, value] of Object.entries(settings)) {
    // a client may say what the session is already (clients of read-only servers send readonly=1)
    if (name === "readonly" && value === (readonly ? "1" : "0")) continue;
    if (!types.has(name)) {
      throw QueryError.of(
        "UNKNOWN_SETTING",
        `Setting ${name.slice(0, 100)} is neither a builtin setting nor started with the prefix 'SQL_' registered for user-defined settings`,
      );
    }
    if (!isAllowedSetting(name, types)) throw cannotModify(name, "");
    const bound = LOWER_ONLY[name];
    if (bound !== undefined) {
      const limit = bound(limits);
      if (!/^\d+$/.test(value) || Number(value) === 0 || Number(value) > limit) {
        throw cannotModify(name, `it may only be lowered here, to at most ${limit}`);
      }
    } else if (/_overflow_mode$/.test(name) && !OVERFLOW_MODES.test(value)) {
      throw cannotModify(name, "only throw or break");
    } else if (WAITS_FOR_MUTATIONS.has(name) && !/^[12]$/.test(value)) {
      throw cannotModify(name, "only 1 or 2: a statement waits for its mutations");
    }
  }
}

/** The settings a query session starts with: the limits, the port's priority, and room for a long query text. */
export function limitSettings(limits: QueryLimits): Record<string, string | number> {
  return {
    max_execution_time: limits.timeoutS,
    timeout_overflow_mode: "throw",
    max_memory_usage: limits.maxMemoryBytes,
    max_result_bytes: limits.maxResultBytes,
    result_overflow_mode: "throw",
    max_threads: limits.maxThreads,
    ...AST_LIMITS,
    // the port's check of a text quotes it twice (inspect.ts), and quoting can double a text's length
    max_query_size: 4 * MAX_QUERY_BYTES + 64 * 1024,
    priority: QUERY_PRIORITY,
    // a bare word is no query, as on a server (chDB reads it as SELECT)
    implicit_select: 0,
    // no addresses, symbols or source lines of the process (chDB turns them on)
    allow_introspection_functions: 0,
    // rows of an INSERT … VALUES are literals: an expression there could call any function
    input_format_values_interpret_expressions: 0,
    input_format_values_deduce_templates_of_expressions: 0,
    // a statement waits for its mutations, within its time limit, rather than leaving them to run on (mutations.ts)
    mutations_sync: 2,
    alter_sync: 2,
    lightweight_deletes_sync: 2,
  };
}

/** Below the write path's (1): the engine suspends a query while a flush's query runs. */
export const QUERY_PRIORITY = 2;

/** The longest query text the port takes (the engine's own default `max_query_size` is 256 KiB). */
export const MAX_QUERY_BYTES = 1024 * 1024;

const cannotModify = (name: string, why: string) =>
  QueryError.of("READONLY", `Cannot modify '${name}' setting on this port${why && `: ${why}`}`);
