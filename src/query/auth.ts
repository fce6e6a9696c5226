import { timingSafeEqual } from "node:crypto";
import { QueryError } from "./errors";

export interface Credentials {
  readonly user: string;
  readonly password: string;
}

/**
 * The credentials a request carries, the ways ClickHouse's HTTP interface takes them: `X-ClickHouse-User` and
 * `X-ClickHouse-Key` headers, HTTP basic authentication, or `user` and `password` URL parameters; none means
 * the user `default` with no password. Mixing two ways is refused, as ClickHouse does.
 */
export function credentialsOf(request: Request, search: URLSearchParams): Credentials {
  const headerUser = request.headers.get("x-clickhouse-user");
  const headerKey = request.headers.get("x-clickhouse-key");
  const authorization = request.headers.get("authorization");
  const inParams = search.has("user") || search.has("password");
  const ways = [headerUser !== null || headerKey !== null, authorization !== null, inParams].filter(Boolean).length;
  if (ways > 1)
    throw failed("Invalid authentication: it is not allowed to use more than one way of authentication at once");
  if (headerUser !== null || headerKey !== null) return { user: headerUser ?? "default", password: headerKey ?? "" };
  if (authorization !== null) return basic(authorization);
  return { user: search.get("user") ?? "default", password: search.get("password") ?? "" };
}

function basic(authorization: string): Credentials {
  const [scheme = "", encoded = ""] = authorization.trim().split(/\s+/, 2);
  if (scheme.toLowerCase() !== "basic") {
    throw failed(`Invalid authentication: '${scheme.slice(0, 20)}' HTTP Authorization scheme is not supported`);
  }
  const decoded = Buffer.from(encoded, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  // without a colon there is no telling a user from a password: the text is neither echoed nor logged
  if (colon < 0) throw failed("Invalid authentication: the Basic credentials hold no ':' between user and password");
  if (colon === 0) throw failed("Got an empty user name from Authorization HTTP header");
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * Whether the credentials are the configured ones. Both are compared, always, in constant time (as digests of
 * equal length), so neither the time taken nor an early exit tells which part was wrong.
 */
export function authenticates(given: Credentials, expected: Credentials): boolean {
  const user = sameText(given.user, expected.user);
  const password = sameText(given.password, expected.password);
  return user && password;
}

function sameText(a: string, b: string): boolean {
  const digest = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest();
  return timingSafeEqual(digest(a), digest(b));
}

/** ClickHouse's answer to wrong credentials, which never says whether the user or the password was wrong. */
export function authenticationFailed(user: string): QueryError {
  return failed(
    `${user.slice(0, 100)}: Authentication failed: password is incorrect, or there is no user with such name`,
  );
}

const failed = (message: string) => QueryError.of("AUTHENTICATION_FAILED", message);
