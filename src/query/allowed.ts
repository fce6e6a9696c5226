/**
 * What the policy lets through, and what it refuses by name: the statements, table functions, engines and system
 * tables a query may use (deny by default: anything not listed is refused), and the functions, commands and table
 * settings refused among what is otherwise allowed. Each list says why. The checks are in policy.ts.
 */

/** The databases that are always there; a query reads their tables by their full names, as the policy allows. */
export const SYSTEM_DATABASES = new Set(["system", "information_schema", "INFORMATION_SCHEMA"]);

/** Statements that only read. (`SHOW PROCESSLIST` is not one: it reads `system.processes` past the port's view.) */
export const READS = new Set([
  "SelectWithUnionQuery",
  "SelectIntersectExceptQuery",
  "ShowTables",
  "ShowColumns",
  "ShowIndexes",
  "ShowFunctions",
  "ShowEngines",
  "ShowCreateTableQuery",
  "ShowCreateViewQuery",
  "ShowCreateDatabaseQuery",
  "ShowSettingQuery",
  "ExistsTableQuery",
  "ExistsDatabaseQuery",
  "ExistsViewQuery",
  "DescribeQuery",
  "CheckQuery",
  "UseQuery",
  "Explain",
]);

/** Statements that change tables, for an operator who allows writes. */
export const WRITES = new Set([
  "InsertQuery",
  "CreateQuery",
  "DropQuery",
  "TruncateQuery",
  "AlterQuery",
  "DeleteQuery",
  "UpdateQuery",
  "Rename",
  "OptimizeQuery",
]);

/**
 * Table functions that read nothing but their arguments and the service's own tables. Every other one (`file`,
 * `url`, `s3`, `remote`, `mysql`, `executable`, `input`, `dictionary`, `loop`, `mergeTreeIndex`, …) reaches
 * outside or past the port's view.
 */
export const TABLE_FUNCTIONS = new Set([
  "numbers",
  "numbers_mt",
  "zeros",
  "zeros_mt",
  "values",
  "generaterandom",
  "generate_series",
  "generateseries",
  "null",
  "view",
  "merge",
  "format",
]);

/**
 * Table engines that keep their data in the engine's own directory and do nothing of their own accord. `Merge`
 * names other tables (they must be the service's); `EmbeddedRocksDB` takes no directory. Not `Buffer`: it flushes
 * its rows into its table later, on a timer, with no client (and runs that table's materialized views then,
 * outside every limit of the port); nor the engines that pull rows in the background (`Kafka`, `RabbitMQ`, `NATS`,
 * `S3Queue`, `AzureQueue`, `FileLog`), which reach outside too.
 */
export const ENGINES =
  /^(?:(?:Replacing|Summing|Aggregating|Collapsing|VersionedCollapsing|Coalescing)?MergeTree|Memory|Log|TinyLog|StripeLog|Null|Set|Join|Merge|EmbeddedRocksDB|GenerateRandom)$/;

/**
 * Scalar functions that read files (`file`, CatBoost models), dictionaries (whose sources are files or servers), the
 * process itself (introspection, also off on the session), or the server's configuration (its paths); those that
 * take a table's structure as a string, whose column expressions the engine evaluates unseen
 * (`structureToProtobufSchema`, `structureToCapnProtoSchema`); and the engine's internal ones (`__getScalar`).
 */
export const FUNCTIONS_REFUSED =
  /^(?:file|catboostevaluate|modelevaluate|dict.*|addresstoline\w*|addresstosymbol|demangle|getserversetting|structureto\w+schema|__\w+)$/;

/** Functions whose string arguments name a database or a table. */
export const NAMING_FUNCTIONS = /^(?:joinget|joingetornull|hascolumnintable)$/;

/** ALTER commands that write outside the table (backups in `shadow/`) or fetch from elsewhere. */
export const ALTER_COMMANDS_REFUSED = /^AlterCommand (?:FREEZE|UNFREEZE|FETCH)/;

/** Table settings (`CREATE … SETTINGS`, `MODIFY SETTING`) that place data on a disk, a path or another server. */
export const TABLE_SETTINGS_REFUSED = /disk|storage_policy|path|url|endpoint|s3|azure|hdfs|cache|keeper|zookeeper/i;

/**
 * System tables a query may read: the catalogue of the service's tables and the engine's features, and the
 * engine's counters. Not the ones that show the process (`stack_trace`, `symbols`), its files (`server_settings`,
 * `disks`, `detached_parts`, `schema_inference_cache`), other clients' data (`query_cache`,
 * `asynchronous_inserts`, `errors`: other clients' messages quote their bound values), access (`users`, `grants`, `named_collections`) or other servers (`clusters`,
 * `zookeeper`). `processes` and `query_log` are read through the port's own tables (views.ts).
 */
export const SYSTEM_TABLES = new Set([
  "one",
  "numbers",
  "numbers_mt",
  "zeros",
  "zeros_mt",
  "databases",
  "tables",
  "columns",
  "data_skipping_indices",
  "parts",
  "parts_columns",
  "projection_parts",
  "projections",
  "merges",
  "mutations",
  "processes",
  "query_log",
  "settings",
  "settings_changes",
  "merge_tree_settings",
  "functions",
  "aggregate_function_combinators",
  "table_functions",
  "table_engines",
  "database_engines",
  "formats",
  "data_type_families",
  "data_skipping_index_types",
  "codecs",
  "collations",
  "time_zones",
  "keywords",
  "contributors",
  "licenses",
  "events",
  "metrics",
  "asynchronous_metrics",
  "warnings",
]);

/** Functions that only parse or print the SQL in their string arguments: a structure there is text, not a table. */
export const PARSE_ONLY =
  /^(?:formatquery\w*|normalizequery\w*|normalizedqueryhash\w*|tokenizequery|highlightquery|obfuscatequery\w*)$/;

/** Keywords after which a structure holds an expression the engine evaluates (a column's default, a check, a TTL). */
export const COLUMN_EXPRESSIONS = new Set([
  "DEFAULT",
  "MATERIALIZED",
  "ALIAS",
  "EPHEMERAL",
  "CHECK",
  "CONSTRAINT",
  "TTL",
]);
