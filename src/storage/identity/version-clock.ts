/**
 * Versions for persons and distinct-ID links. Each is above every version this process handed out before and
 * above the version it replaces, so a newer write always wins a FINAL read. Tied to wall-clock microseconds, so
 * versions from separate service instances order by time too (up to their clock skew).
 */
export class VersionClock {
  #last = 0;

  next(after = 0): number {
    this.#last = Math.max(this.#last + 1, Date.now() * 1000, after + 1);
    return this.#last;
  }
}
