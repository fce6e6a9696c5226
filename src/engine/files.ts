import type { EmbeddedFile } from "./unpack";

/**
 * The native engine files inside the compiled executable. Run from source there are none (chDB loads from
 * node_modules); `scripts/build.ts` replaces this module with one that embeds them, with their digests.
 */
export const embeddedFiles: readonly EmbeddedFile[] | undefined = undefined;
