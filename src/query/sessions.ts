import type { Session } from "chdb";
import { QueryError } from "./errors";

/** Most named sessions kept at once; past it, the one idle longest is closed for the new one. */
export const MAX_SESSIONS = 64;
/** Most queries waiting for a place; beyond, a query is refused at once. */
export const MAX_WAITING = 64;

/** A named session and its state between requests. */
export class NamedSession {
  busy = false;
  /** When its last request ended: the one idle longest is closed first. */
  idleSince = 0;
  #timer: Timer | undefined;
  #expired = false;

  constructor(
    readonly session: Session,
    readonly key: string,
    readonly setup: Promise<void>,
    private readonly forget: () => void,
  ) {}

  /** The request is over: closed now (timeout 0), or kept for `timeoutS` more. */
  done(timeoutS: number): void {
    this.busy = false;
    this.idleSince = performance.now();
    clearTimeout(this.#timer);
    if (this.#expired) return;
    if (timeoutS === 0) this.expire();
    else this.#timer = setTimeout(() => this.expire(), timeoutS * 1000);
  }

  /** Closed and forgotten, once: a later request with its id gets a new session. */
  expire(): void {
    clearTimeout(this.#timer);
    if (this.#expired) return;
    this.#expired = true;
    this.forget();
    this.session.close();
  }
}

/**
 * The named sessions (`session_id`), at most `MAX_SESSIONS`. A new one past the cap closes the one idle longest,
 * so that sessions opened and left (with a timeout of an hour) never lock other clients out; only when every
 * session is in a request is a new one refused.
 */
export class NamedSessions {
  readonly #sessions = new Map<string, NamedSession>();

  get(id: string): NamedSession | undefined {
    return this.#sessions.get(id);
  }

  add(id: string, open: (forget: () => void) => NamedSession): NamedSession {
    if (this.#sessions.size >= MAX_SESSIONS) {
      const idle = [...this.#sessions.values()].filter((named) => !named.busy);
      if (idle.length === 0) {
        throw QueryError.of("TOO_MANY_SIMULTANEOUS_QUERIES", `Too many sessions. Maximum: ${MAX_SESSIONS}`);
      }
      idle.reduce((oldest, named) => (named.idleSince < oldest.idleSince ? named : oldest)).expire();
    }
    const named = open(() => {
      if (this.#sessions.get(id) === named) this.#sessions.delete(id);
    });
    this.#sessions.set(id, named);
    return named;
  }

  closeAll(): void {
    for (const named of [...this.#sessions.values()]) named.expire();
  }
}

/** `QUERY_CONCURRENCY` places; a query waits for one up to `waitMs`, as with ClickHouse's `queue_max_wait_ms`. */
export class Places {
  #taken = 0;
  /** Each waiter is told whether it got a place (a freed one is handed over directly) or waited too long. */
  readonly #waiting: ((given: boolean) => void)[] = [];

  constructor(
    private readonly size: number,
    private readonly waitMs: number,
  ) {}

  get taken(): number {
    return this.#taken;
  }

  async take(): Promise<() => void> {
    if (this.#taken < this.size) this.#taken++;
    else if (!(await this.#wait())) throw tooMany(this.size);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const next = this.#waiting.shift();
      if (next) next(true);
      else this.#taken--;
    };
  }

  #wait(): Promise<boolean> {
    if (this.#waiting.length >= MAX_WAITING) return Promise.resolve(false);
    const { promise, resolve } = Promise.withResolvers<boolean>();
    const timer = setTimeout(() => {
      this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
      resolve(false);
    }, this.waitMs);
    const waiter = (given: boolean) => {
      clearTimeout(timer);
      resolve(given);
    };
    this.#waiting.push(waiter);
    return promise;
  }
}

const tooMany = (size: number) =>
  QueryError.of("TOO_MANY_SIMULTANEOUS_QUERIES", `Too many simultaneous queries. Maximum: ${size}`);
