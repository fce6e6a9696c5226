import { resolve } from "node:path";
import { type } from "arktype";
import proxyaddr from "proxy-addr";

/**
 * The parsers the topics' tables share: each takes a variable's text and gives its value, or arktype's errors
 * (which name what was expected and what was found). A parser only one setting uses stays in its row.
 */

export const positive = type("string.integer.parse").to("number.integer > 0");
export const port = type("string.integer.parse").to("0 <= number.integer <= 65535");
export const list = type("string").pipe((value) =>
  value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0),
);
const isOrigin = (value: string): boolean => URL.canParse(value) && new URL(value).origin === value;
export const origins = list.to(
  type("string[]").narrow((values, ctx) => {
    const bad = values.find((origin) => !isOrigin(origin));
    return bad === undefined || ctx.reject({ expected: "a list of origins like https://app.example.com", actual: bad });
  }),
);
/** Property keys that name columns (`mat_<key>`): letters, digits, `_` and `$`, not starting with a digit; `none`. */
export const propertyKeys = list
  .pipe((keys) => (keys.length === 1 && keys[0] === "none" ? [] : [...new Set(keys)]))
  .to(
    type("string[]").narrow((values, ctx) => {
      const bad = values.find((key) => !/^[A-Za-z_$][A-Za-z0-9_$]{0,99}$/.test(key));
      return bad === undefined || ctx.reject({ expected: "property keys of letters, digits, _ and $", actual: bad });
    }),
  );
export const set =
  <T>(parse: (text: string) => T[] | type.errors) =>
  (text: string) => {
    const values = parse(text);
    return values instanceof type.errors ? values : new Set(values);
  };
export const path = type("string").pipe((value) => resolve(value));
/** `0` or `1`, as a boolean. */
export const flag = type("'0' | '1'").pipe((value) => value === "1");
/** Addresses and CIDR ranges, or proxy-addr's names for ranges (`loopback`, `linklocal`, `uniquelocal`). */
export const proxies = list.to(
  type("string[]").narrow((values, ctx) => {
    const bad = values.find((value) => !isProxyRange(value));
    return bad === undefined || ctx.reject({ expected: "addresses or CIDR ranges like 10.0.0.0/8", actual: bad });
  }),
);
const isProxyRange = (value: string): boolean => {
  try {
    proxyaddr.compile(value);
    return true;
  } catch {
    return false;
  }
};
