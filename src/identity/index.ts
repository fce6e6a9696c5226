export { PERSON_ID_NAMESPACE, personIdFor } from "./person";
export { type IdentityOptions, IdentityResolver, type Resolution } from "./resolver";
