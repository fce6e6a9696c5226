export { SchemaError } from "./schema";
export { type FlushPhases, Storage, type StorageObserver, type StorageOptions, storageOptions } from "./storage";
