export { importCommand } from "./import";
export { queryCommand } from "./query";
