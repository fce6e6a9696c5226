/**
 * Arrival stamps: wall-clock microseconds, each above the one before, so the events a process applies order as it
 * applied them even within one microsecond, and events applied by separate instances order by time (up to their
 * clocks' skew). A property update that ties on its event timestamp goes by its arrival (docs/identity.md#person-properties).
 */
export class ArrivalClock {
  #last = 0;

  next(): number {
    this.#last = Math.max(this.#last + 1, Date.now() * 1000);
    return this.#last;
  }
}
