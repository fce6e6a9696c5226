/**
 * SQL text as ClickHouse's lexer cuts it, as far as the port needs: where string literals, quoted identifiers,
 * comments and heredocs begin and end, so that what is found in the text (a placeholder, a database name, the
 * start of an INSERT's data) is found outside them.
 */
type TokenKind = "string" | "quoted" | "word" | "number" | "comment" | "space" | "symbol";

export interface Token {
  readonly kind: TokenKind;
  /** The token as written. */
  readonly text: string;
  /** Where it starts in the text. */
  readonly start: number;
}

const COMMENT = /--[^\n]*|#[ !][^\n]*|\/\*[\s\S]*?(?:\*\/|$)/;
const STRING = /'(?:[^'\\]|\\[\s\S]|'')*'?/;
const HEREDOC = /\$([A-Za-z0-9_]*)\$[\s\S]*?\$\1\$/;
const QUOTED = /`(?:[^`\\]|\\[\s\S]|``)*`?|"(?:[^"\\]|\\[\s\S]|"")*"?/;

/**
 * A regular expression's source for what is text to SQL, not code: a comment, a string literal, a heredoc (its
 * tag the one capturing group) or a quoted identifier.
 */
export const OPAQUE = [COMMENT, STRING, HEREDOC, QUOTED].map((pattern) => pattern.source).join("|");

const sticky = (pattern: RegExp) => new RegExp(pattern.source, "y");

const PATTERNS: readonly [TokenKind, RegExp][] = [
  ["space", /\s+/y],
  ["comment", sticky(COMMENT)],
  ["string", sticky(STRING)],
  ["string", sticky(HEREDOC)],
  ["quoted", sticky(QUOTED)],
  ["word", /[A-Za-z_][A-Za-z0-9_$]*/y],
  ["number", /[0-9][0-9A-Za-z_.]*(?:[eE][+-]?[0-9]+)?/y],
];

/** The text's tokens, in order. An unterminated literal or identifier runs to the end, as the lexer reads it. */
export function* tokens(text: string): Generator<Token> {
  let position = 0;
  while (position < text.length) {
    let token: Token | undefined;
    for (const [kind, pattern] of PATTERNS) {
      pattern.lastIndex = position;
      const match = pattern.exec(text);
      if (match !== null && match[0].length > 0) {
        token = { kind, text: match[0], start: position };
        break;
      }
    }
    token ??= { kind: "symbol", text: text[position]!, start: position };
    yield token;
    position += token.text.length;
  }
}

/** An identifier token's name: a bare word as it is, a quoted one unquoted and unescaped. */
export function identifierName(token: Token): string | undefined {
  if (token.kind === "word") return token.text;
  if (token.kind !== "quoted") return undefined;
  const quote = token.text[0]!;
  return unescapeText(token.text.slice(1, -1).replaceAll(quote + quote, quote));
}

/** A string literal's value. */
export function stringValue(token: Token): string {
  return unescapeText(token.text.slice(1, -1).replaceAll("''", "'"));
}

/** The tokens that mean something: no spaces, no comments. */
export function significant(text: string): Token[] {
  return [...tokens(text)].filter((token) => token.kind !== "space" && token.kind !== "comment");
}

const ESCAPES: Readonly<Record<string, string>> = {
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  "0": "\0",
  a: "\x07",
  v: "\v",
};

/** ClickHouse's escaped text format: `\t`, `\n`, `\\`, `\xHH`, …; any other escaped character stands for itself. */
export function unescapeText(text: string): string {
  return text.replace(/\\(x[0-9A-Fa-f]{2}|[\s\S])/g, (_, escaped: string) =>
    escaped.length === 3 ? String.fromCharCode(Number.parseInt(escaped.slice(1), 16)) : (ESCAPES[escaped] ?? escaped),
  );
}
