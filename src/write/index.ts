export { serviceBackup } from "./backup";
export { forgetDirectly } from "./forget";
export { Storage, type StorageOptions, storageOptions } from "./storage";
