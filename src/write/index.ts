export { serviceBackup } from "./backup";
export { forgetDirectly } from "./forget";
export { type StorageOptions, storageOptions } from "./options";
export { Storage } from "./storage";
