/** One embedded file: where it lives inside the executable, and what it must be once unpacked. */
export interface EmbeddedFile {
  readonly name: string;
  readonly embeddedPath: string;
  readonly sha256: string;
  readonly size: number;
}

/**
 * The native engine files inside the compiled executable. Run from source there are none (chDB loads from
 * node_modules); `scripts/build.ts` replaces this module with one that embeds them, with their digests.
 */
export const embeddedFiles: readonly EmbeddedFile[] | undefined = undefined;
