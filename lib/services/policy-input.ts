/**
 * Decoding a policy file (YAML, or JSON, which is YAML) into a value for the schema, with the
 * document bounded before anything expands it: at most POLICY_FILE_MAX_BYTES, POLICY_FILE_MAX_DEPTH
 * levels of nesting, and aliases bounded by yaml's own expansion count (maxAliasCount: a YAML alias
 * bomb — nine levels of nine aliases — would otherwise expand to 387 million nodes). A document
 * over a bound is an invalid policy (400) that names the bound, never a crash or a 500.
 */
import { isCollection, isPair, parseDocument, YAMLParseError, type Node as YamlNode } from "yaml";
import { parsePolicyFile, type ParseResult, type PolicyFile, type PolicyIssue } from "../policy/policy-file";

/** The admin API's body cap (lib/http/body.ts) is the same: a file of a few thousand tenants fits. */
export const POLICY_FILE_MAX_BYTES = 1024 * 1024;
/** A policy file's deepest path is about 6 levels (`tenants[0].overrides[1].expiresAt`). */
export const POLICY_FILE_MAX_DEPTH = 32;
/** yaml's maxAliasCount: references × the aliases inside what they reference; plenty for anchors of repeated limits. */
export const POLICY_FILE_MAX_ALIASES = 1000;

export type PolicyInput = string | Uint8Array | Record<string, unknown>;

const refused = (message: string): { ok: false; issues: PolicyIssue[] } => ({ ok: false, issues: [{ path: "", message }] });
const TOO_DEEP = `the document nests deeper than ${POLICY_FILE_MAX_DEPTH} levels`;

/** Depth of a decoded value, walked with an explicit stack (a deep value must not overflow ours). */
function depthOf(value: unknown, limit: number): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    max = Math.max(max, d);
    if (max > limit) return max;
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return max;
}

/** Depth of a YAML syntax tree (aliases count as leaves: their expansion is bounded separately). */
function yamlDepth(root: YamlNode | null, limit: number): number {
  let max = 0;
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [node, d] = stack.pop()!;
    if (isPair(node)) {
      stack.push([node.key, d], [node.value, d]);
    } else if (isCollection(node)) {
      max = Math.max(max, d);
      if (max > limit) return max;
      for (const item of node.items) stack.push([item, d + 1]);
    }
  }
  return max;
}

function decodeYaml(text: string): { ok: true; value: unknown } | { ok: false; issues: PolicyIssue[] } {
  const doc = parseDocument(text, { prettyErrors: true });
  const error = doc.errors[0];
  if (error) {
    // The parser itself recurses on nesting: a stack overflow there is a document nested too deeply.
    if (/call stack/i.test(error.message)) return refused(TOO_DEEP);
    const pos = error.linePos?.[0];
    return { ok: false, issues: [{ path: pos ? `line ${pos.line}, column ${pos.col}` : "", message: error.message.split("\n")[0] }] };
  }
  if (yamlDepth(doc.contents, POLICY_FILE_MAX_DEPTH) > POLICY_FILE_MAX_DEPTH) return refused(TOO_DEEP);
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
  } else if (depthOf(value, POLICY_FILE_MAX_DEPTH) > POLICY_FILE_MAX_DEPTH) {
    return refused(TOO_DEEP);
  }
  return parsePolicyFile(value);
}
