import { readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { type } from "arktype";
import { ImportError } from "./errors";

/** How far a file is acknowledged: every line up to `line`, which ends at `offset` bytes of its (inflated) text. */
export interface Position {
  readonly line: number;
  readonly offset: number;
}

export const START: Position = { line: 0, offset: 0 };

const FileState = type({ size: "number", modified: "number", line: "number", offset: "number", done: "boolean" });
const State = type({ version: "1", files: { "[string]": FileState } });
type FileState = typeof FileState.infer;

/**
 * The acknowledged position of each file of an import, kept in a JSON file so that `--resume` goes on where an
 * interrupted or crashed import stopped. A file is known by its absolute path, and its size and modification time
 * at the start: a file changed since is refused rather than resumed at a position that no longer means anything.
 * Written atomically (a temporary file renamed over it), at most once a second while the import runs, and at
 * its end.
 */
export class Checkpoint {
  readonly #files: Record<string, FileState>;
  #dirty = false;
  #written = 0;

  private constructor(
    readonly path: string,
    files: Record<string, FileState>,
  ) {
    this.#files = files;
  }

  /**
   * A new checkpoint at `path`, or, to resume, the one already there (none there: nothing done yet). Written at
   * once, so that a path the import cannot write is refused before anything is imported.
   */
  static open(path: string, resume: boolean): Checkpoint {
    const checkpoint = resume ? Checkpoint.#read(path) : new Checkpoint(path, {});
    checkpoint.#dirty = true;
    checkpoint.write();
    return checkpoint;
  }

  static #read(path: string): Checkpoint {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (error) {
      if ((error as { code?: string }).code === "ENOENT") return new Checkpoint(path, {});
      throw new ImportError(`checkpoint ${path}: ${(error as Error).message}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const state = State(parsed);
    if (state instanceof type.errors) throw new ImportError(`checkpoint ${path} is not a checkpoint of ingest import`);
    return new Checkpoint(path, state.files);
  }

  /** Where to start reading `file`: its acknowledged position, or the start. Undefined: the file is done. */
  startOf(file: string): Position | undefined {
    const key = resolve(file);
    const known = this.#files[key];
    const { size, mtimeMs } = statSync(file);
    if (known === undefined || (known.line === 0 && !known.done)) {
      this.#files[key] = { size, modified: mtimeMs, ...START, done: false };
      return START;
    }
    if (known.size !== size || known.modified !== mtimeMs) {
      throw new ImportError(`${file} changed since checkpoint ${this.path} was written: import it without --resume`);
    }
    return known.done ? undefined : { line: known.line, offset: known.offset };
  }

  /** Records that `file` is acknowledged up to `position` (done: to its end). */
  acknowledge(file: string, position: Position, done = false): void {
    const state = this.#files[resolve(file)];
    if (state === undefined) return;
    Object.assign(state, { line: position.line, offset: position.offset, done });
    this.#dirty = true;
    if (performance.now() - this.#written >= 1000) this.write();
  }

  /** Writes what changed since the last write. */
  write(): void {
    if (!this.#dirty) return;
    const temporary = `${this.path}.${process.pid}.tmp`;
    try {
      writeFileSync(temporary, `${JSON.stringify({ version: 1, files: this.#files }, null, 2)}\n`);
      renameSync(temporary, this.path);
    } catch (error) {
      throw new ImportError(
        `cannot write checkpoint ${this.path} (${(error as Error).message}): choose another with --checkpoint`,
      );
    }
    this.#dirty = false;
    this.#written = performance.now();
  }
}
