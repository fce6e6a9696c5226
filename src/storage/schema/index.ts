export { type RepairObserver, SchemaError, type ViewObserver } from "./check";
export { consistencyOf } from "./cluster";
export { createSchema } from "./create";
export { EVENTS_PARTITION, eventPartition } from "./partition";
export { type Rebuild, type RebuildObserver, SESSIONS_SET_ASIDE } from "./rebuild";
export { sessionsFrom } from "./sessions";
export { KEEPER_PATHS, onClusterClause, type SchemaObject, type SchemaOptions, schemaObjects, TABLES } from "./tables";
export { SCHEMA_VERSION } from "./version";
