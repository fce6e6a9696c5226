import { QueryError } from "./errors";
import { stringValue } from "./tokens";

/** The engine's parse of a statement (`EXPLAIN AST`), as the policy reads it. */

/** One node of `EXPLAIN AST`: its type (the label's first word), its label, and its children. */
export interface AstNode {
  readonly type: string;
  readonly label: string;
  readonly children: AstNode[];
}

/** Parses `EXPLAIN AST` output: one node a line, children indented one space deeper than their parent. */
export function parseAst(text: string): AstNode {
  const root: AstNode = { type: "", label: "", children: [] };
  const stack: { node: AstNode; depth: number }[] = [{ node: root, depth: -1 }];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const depth = line.length - line.trimStart().length;
    const label = line.trim();
    const node: AstNode = { type: label.split(" ", 1)[0]!, label, children: [] };
    while (stack.at(-1)!.depth >= depth) stack.pop();
    stack.at(-1)!.node.children.push(node);
    stack.push({ node, depth });
  }
  if (root.children.length !== 1) throw QueryError.of("SYNTAX_ERROR", "Expected exactly one statement");
  return root.children[0]!;
}

/** The function a `Function <name> [(alias …)] [(children N)]` node calls. */
export function functionName(node: AstNode): string {
  return node.label.slice("Function ".length).replace(/ \((alias|children) [\s\S]*$/, "");
}

/** An `Identifier <name>` node's name. */
export function nodeIdentifier(node: AstNode): string {
  return node.label.slice("Identifier ".length).replace(/ \(alias [\s\S]*\)$/, "");
}

/** A `Literal '<text>'` node's string value (a number's text, otherwise). */
export function literalValue(node: AstNode): string {
  const text = node.label.slice("Literal ".length);
  return text.startsWith("'") ? stringValue({ kind: "string", text, start: 0 }) : text;
}
