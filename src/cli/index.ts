export { backupCommand } from "./backup";
export { forgetCommand } from "./forget";
export { importCommand } from "./import";
export { queryCommand } from "./query";
export { restoreCommand } from "./restore";
