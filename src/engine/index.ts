export { heldBy } from "./holder";
export { lowerMergePriority } from "./merge-threads";
export { type EngineOpenOptions, openEmbeddedEngine, type SessionConstructor } from "./open";
export { restartFor, workerThreadsFor } from "./restart";
export { incompleteRestore, markRestoring, RESTORE_MARKER, syncPath, unmarkRestoring } from "./restore-marker";
export { detachStdin } from "./stdin";
