export { PERSON_ID_NAMESPACE, personIdFor } from "./person";
export { DEFAULT_IDENTITY_OPTIONS, type IdentityOptions, IdentityResolver, type Resolution } from "./resolver";
