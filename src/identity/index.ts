export { personIdFor } from "./person";
export { type IdentityOptions, IdentityResolver, type Resolution } from "./resolver";
