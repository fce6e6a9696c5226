export { PERSON_ID_NAMESPACE, personIdFor } from "./person";
export {
  type CacheObserver,
  DEFAULT_IDENTITY_OPTIONS,
  type IdentityOptions,
  IdentityResolver,
  type Preloaded,
  type Resolution,
} from "./resolver";
