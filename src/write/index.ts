export { Storage, type StorageOptions, storageOptions } from "./storage";
