export { PERSON_ID_NAMESPACE, personIdFor } from "./person";
export {
  type CacheObserver,
  type IdentityOptions,
  IdentityResolver,
  type Preloaded,
  type Resolution,
} from "./resolver";
