export { backupCommand } from "./backup";
export { importCommand } from "./import";
export { queryCommand } from "./query";
export { restoreCommand } from "./restore";
