export { type RepairObserver, SchemaError } from "./check";
export { clusterInsertSettings } from "./cluster";
export { createSchema } from "./create";
export { KEEPER_PATHS, type SchemaObject, schemaObjects } from "./tables";
