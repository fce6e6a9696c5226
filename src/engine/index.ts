export { heldBy } from "./holder";
export { lowerMergePriority } from "./merge-threads";
export { openEmbeddedEngine, type SessionConstructor } from "./open";
export { detachStdin } from "./stdin";
export { ensureWorkerThreads, workerThreadsFor } from "./workers";
