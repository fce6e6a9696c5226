export { type PersonsOf, personsOf } from "./erasure";
export { stamped, type WrittenFact } from "./facts";
export { deriveGroups, type GroupFactRow, type GroupRow, groupFactsOf } from "./groups";
export { personIdFor } from "./person";
export { factsWrittenBetween, fillOverrides, latestFactWrite, loadPersons, type SweepCursor } from "./person-store";
export type { IdentityOptions, Repair, Resolution } from "./resolution";
export { IdentityResolver } from "./resolver";
export type { PersonRow } from "./rows";
