import type { IncomingMessage } from "node:http";
import proxyaddr from "proxy-addr";

/** Which addresses are the operator's own proxies (`TRUSTED_PROXIES`), compiled once per list. */
const compiled = new WeakMap<readonly string[], ReturnType<typeof proxyaddr.compile>>();

function trustOf(trusted: readonly string[]): ReturnType<typeof proxyaddr.compile> {
  let trust = compiled.get(trusted);
  if (trust === undefined) {
    trust = proxyaddr.compile([...trusted]);
    compiled.set(trusted, trust);
  }
  return trust;
}

/**
 * The client's address: the connection's (`peer`), or, when that is a trusted proxy, the nearest address in
 * `X-Forwarded-For` that is not (every hop trusted: the farthest). A client can put anything in the header, so it
 * is read only past proxies the operator named. An IPv4 address that arrives IPv6-mapped is given as IPv4.
 */
export function clientIp(
  peer: string | undefined,
  forwardedFor: string | null,
  trusted: readonly string[],
): string | undefined {
  if (peer === undefined || peer === "") return undefined;
  const address =
    trusted.length === 0
      ? peer
      : proxyaddr(
          // proxy-addr reads a Node request's socket address and X-Forwarded-For: these two are all it needs
          {
            socket: { remoteAddress: peer },
            headers: { "x-forwarded-for": forwardedFor ?? undefined },
          } as unknown as IncomingMessage,
          trustOf(trusted),
        );
  return unmapped(address);
}

/** `::ffff:192.0.2.1` (an IPv4 client of a dual-stack listener) as `192.0.2.1`. */
function unmapped(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return mapped === null ? address : mapped[1]!;
}
