/**
 * Decoding a policy file (YAML, or JSON, which is YAML) into a value for the schema, with the
 * document bounded before anything expands it (docs/policy-file.md "Bounds"):
 *
 * - at most POLICY_FILE_MAX_BYTES;
 * - at most POLICY_FILE_MAX_NODES values (scalars, collections, aliases), counted by yaml's lexer
 *   before the document is composed, stopping at the bound: composing is linear but costly, so a
 *   megabyte of `[0,0,0,…]` is refused in a fraction of a second instead of parsed for seconds;
 * - at most POLICY_FILE_MAX_DEPTH levels of nesting;
 * - aliases bounded by yaml's own expansion count (maxAliasCount: a YAML alias bomb — nine levels
 *   of nine aliases — would otherwise expand to 387 million nodes);
 * - duplicate keys refused by one pass of our own (yaml's check compares every key of a mapping
 *   with every other: a mapping of 60,000 keys took minutes).
 *
 * A document over a bound is an invalid policy (400) that names the bound, never a crash or a 500.
 */
import { CST, isCollection, isMap, isPair, isScalar, Lexer, LineCounter, parseDocument, YAMLParseError, type Node as YamlNode } from "yaml";
import { parsePolicyFile, type ParseResult, type PolicyFile, type PolicyIssue } from "../../policy/policy-file";

/** The admin API's body cap (lib/http/body.ts) is the same: a file of a few thousand tenants fits. */
export const POLICY_FILE_MAX_BYTES = 1024 * 1024;
/** Values in one document: the demo policy has about 600; 5,000 tenants with a key each about 50,000. */
export const POLICY_FILE_MAX_NODES = 100_000;
/** A policy file's deepest path is about 6 levels (`tenants[0].overrides[1].expiresAt`). */
export const POLICY_FILE_MAX_DEPTH = 32;
/** yaml's maxAliasCount: references × the aliases inside what they reference; plenty for anchors of repeated limits. */
export const POLICY_FILE_MAX_ALIASES = 1000;

export type PolicyInput = string | Uint8Array | Record<string, unknown>;

const refused = (message: string): { ok: false; issues: PolicyIssue[] } => ({ ok: false, issues: [{ path: "", message }] });
const TOO_DEEP = `the document nests deeper than ${POLICY_FILE_MAX_DEPTH} levels`;
const TOO_MANY = `the document has over ${POLICY_FILE_MAX_NODES} values`;

/** The lexer tokens that start a value (a block scalar counts twice: its header and its text). */
const VALUE_TOKENS = new Set(["scalar", "single-quoted-scalar", "double-quoted-scalar", "alias", "flow-map-start", "flow-seq-start", "seq-item-ind"]);

/** Whether the text has more than `limit` values; stops lexing at the bound. */
function tooManyValues(text: string, limit: number): boolean {
  let n = 0;
  for (const token of new Lexer().lex(text)) {
    const type = CST.tokenType(token);
    if (type !== null && VALUE_TOKENS.has(type) && ++n > limit) return true;
  }
  return false;
}

/** Depth and size of a decoded value, walked with an explicit stack (a deep value must not overflow ours). */
function boundsOf(value: unknown): "deep" | "many" | null {
  let nodes = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (++nodes > POLICY_FILE_MAX_NODES) return "many";
    if (v === null || typeof v !== "object") continue;
    if (d > POLICY_FILE_MAX_DEPTH) return "deep";
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return null;
}

/**
 * The first problem of a YAML syntax tree's shape: nested deeper than `limit` (aliases count as
 * leaves: their expansion is bounded separately), or a mapping with a key twice. One pass.
 */
function shapeProblem(root: YamlNode | null, limit: number, lines: LineCounter): PolicyIssue | null {
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [node, d] = stack.pop()!;
    if (isPair(node)) {
      stack.push([node.key, d], [node.value, d]);
    } else if (isCollection(node)) {
      if (d > limit) return { path: "", message: TOO_DEEP };
      if (isMap(node)) {
        const seen = new Set<unknown>();
        for (const pair of node.items) {
          const key = isScalar(pair.key) ? pair.key.value : pair.key;
          if (seen.has(key)) {
            const at = isScalar(pair.key) && pair.key.range ? lines.linePos(pair.key.range[0]) : null;
            return { path: at ? `line ${at.line}, column ${at.col}` : "", message: `Map keys must be unique (${JSON.stringify(String(key))} twice)` };
          }
          seen.add(key);
        }
      }
      for (const item of node.items) stack.push([item, d + 1]);
    }
  }
  return null;
}

function decodeYaml(text: string): { ok: true; value: unknown } | { ok: false; issues: PolicyIssue[] } {
  if (tooManyValues(text, POLICY_FILE_MAX_NODES)) return refused(TOO_MANY);
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: false, lineCounter });
  const error = doc.errors[0];
  if (error) {
    // The parser itself recurses on nesting: a stack overflow there is a document nested too deeply.
    if (/call stack/i.test(error.message)) return refused(TOO_DEEP);
    const pos = error.linePos?.[0];
    return { ok: false, issues: [{ path: pos ? `line ${pos.line}, column ${pos.col}` : "", message: error.message.split("\n")[0] }] };
  }
  const shape = shapeProblem(doc.contents, POLICY_FILE_MAX_DEPTH, lineCounter);
  if (shape) return { ok: false, issues: [shape] };
  try {
    return { ok: true, value: doc.toJS({ maxAliasCount: POLICY_FILE_MAX_ALIASES }) };
  } catch (e) {
    // yaml throws ReferenceError for an alias bomb and for an alias before its anchor.
    if (e instanceof ReferenceError) {
      return refused(
        /excessive alias/i.test(e.message)
          ? `the document's aliases expand too far (over ${POLICY_FILE_MAX_ALIASES} references: a YAML alias bomb?)`
          : e.message.split("\n")[0],
      );
    }
    if (e instanceof YAMLParseError || e instanceof RangeError) return refused(TOO_DEEP);
    throw e;
  }
}

/**
 * Decodes YAML or JSON text (or takes an object), within the bounds above, then validates it with
 * the policy file's schema. Syntax errors name their line and column; validation errors their path.
 */
export function parsePolicyInput(input: PolicyInput): ParseResult<PolicyFile> {
  let value: unknown = input;
  if (typeof input === "string" || input instanceof Uint8Array) {
    const bytes = typeof input === "string" ? Buffer.byteLength(input, "utf8") : input.byteLength;
    if (bytes > POLICY_FILE_MAX_BYTES) return refused(`the document is over ${POLICY_FILE_MAX_BYTES} bytes`);
    const decoded = decodeYaml(typeof input === "string" ? input : new TextDecoder().decode(input));
    if (!decoded.ok) return decoded;
    value = decoded.value;
    if (value === null || value === undefined) return refused("the file is empty");
  } else {
    const bounds = boundsOf(value);
    if (bounds) return refused(bounds === "deep" ? TOO_DEEP : TOO_MANY);
  }
  return parsePolicyFile(value);
}
