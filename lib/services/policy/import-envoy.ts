/**
 * `sluice import envoy PATH... [--into POLICY]` (docs/envoy-ratelimit.md): envoyproxy/ratelimit
 * config files → a complete policy file whose `rateLimitService.domains` hold them, field for
 * field. Pure apart from its inputs (file names and texts; the CLI reads the disk).
 *
 * Each file is read as their loader reads it (src/config/config_impl.go): YAML 1.1 (`yes` is
 * true, `010` is 8, `<<` merges), only the first document, every mapping key a string and one they
 * know, lists only of mappings, no floats; a value their struct holds as a string (`domain`, `key`,
 * `value`, `name`, `unit`) is the scalar's text as written (`value: 10` is "10", `value: yes` is
 * "yes"); an empty value is an absent one. Then each domain is checked with the section's own
 * schema, and domains across files must be unique (their MERGE_DOMAIN_CONFIG: `mergeDomains`).
 *
 * Never a silent drop: what theirs would refuse, and what theirs would silently ignore (a second
 * YAML document, a duplicate mapping key, a field at a level where it means nothing), is an issue
 * naming the file, its line and the path. The one thing written differently: a `rate_limit`
 * without `requests_per_unit`, which they read as 0, is written with `requests_per_unit: 0`, and a
 * note says so.
 */
import { Document, isAlias, isMap, isScalar, isSeq, LineCounter, parseAllDocuments, parseDocument, YAMLMap, YAMLSeq, type Node as YamlNode } from "yaml";
import { envoyDomainSchema, compositeKey, type EnvoyDomainSpec } from "../../policy/envoy/schema";
import { formatPath, type PolicyFile } from "../../policy/policy-file";
import { parsePolicyInput, POLICY_FILE_MAX_ALIASES, POLICY_FILE_MAX_BYTES } from "./policy-input";

export interface EnvoyConfigFile {
  /** How issues name the file: the path as given. */
  name: string;
  text: string;
}

export interface ImportIssue {
  file: string;
  /** 1-based line in the file, when the path leads to a node. */
  line?: number;
  /** In the file's notation: `descriptors[1].rate_limit.unit`; "" for the whole file. */
  path: string;
  message: string;
}

export interface ImportOptions {
  /** The policy file to add the domains to (its content is kept, comments included). */
  into?: EnvoyConfigFile;
  /** Their MERGE_DOMAIN_CONFIG: files naming the same domain add their descriptors to it. */
  mergeDomains?: boolean;
  /** Replace a domain `into` already has, instead of refusing it. */
  replace?: boolean;
}

export type ImportResult = { ok: true; text: string; domains: string[]; notes: string[] } | { ok: false; issues: ImportIssue[] };

/** Their loader's `validKeys`: every key it accepts, at any level. */
const THEIR_KEYS: ReadonlySet<string> = new Set([
  "domain", "key", "value", "descriptors", "rate_limit", "unit", "requests_per_unit", "unlimited", "shadow_mode",
  "quota_mode", "name", "replaces", "detailed_metric", "value_to_metric", "share_threshold", "metadata",
]);
/** The fields their structs hold as strings: any scalar's text is taken as written. */
const STRING_FIELDS: ReadonlySet<string> = new Set(["domain", "key", "value", "name", "unit"]);
/** Sluice's fields on a rate_limit, which their files cannot carry. */
const SLUICE_FIELDS: ReadonlySet<string> = new Set(["algorithm", "window", "period", "burst", "precision", "failureMode"]);
/** YAML 1.1 integers (yaml.v2): decimal, 0b, 0x, 0-octal, `_` separators, sexagesimal. */
const INTEGER_SOURCE = /^[-+]?(0b[01_]+|0x[0-9a-fA-F_]+|0[0-7_]*|[1-9][0-9_]*(:[0-5]?[0-9])*)$/;

class Reader {
  readonly issues: ImportIssue[] = [];
  private aliases = 0;
  constructor(
    readonly file: string,
    private readonly doc: Document.Parsed,
    private readonly lines: LineCounter,
  ) {}

  issue(path: (string | number)[], message: string, node?: unknown): void {
    const at = node ?? nodeAt(this.doc, path);
    const range = (at as { range?: [number, number, number] } | undefined)?.range;
    this.issues.push({ file: this.file, path: formatPath(path), message, ...(range ? { line: this.lines.linePos(range[0]).line } : {}) });
  }

  private resolve(node: unknown): unknown {
    while (isAlias(node)) {
      if (++this.aliases > POLICY_FILE_MAX_ALIASES) throw new RangeError(`aliases expand too far (over ${POLICY_FILE_MAX_ALIASES})`);
      node = node.resolve(this.doc);
    }
    return node;
  }

  /** A mapping's pairs with `<<` merges applied (its own keys win, then the first merged source). */
  private pairs(map: YamlNode): { key: unknown; value: unknown }[] {
    if (!isMap(map)) return [];
    const own: { key: unknown; value: unknown }[] = [];
    const merged: { key: unknown; value: unknown }[] = [];
    for (const pair of map.items) {
      if (isScalar(pair.key) && typeof pair.key.value === "symbol") {
        const source = this.resolve(pair.value);
        const sources = isSeq(source) ? source.items.map((s) => this.resolve(s)) : [source];
        for (const s of sources) merged.push(...this.pairs(s as YamlNode));
      } else own.push({ key: pair.key, value: pair.value });
    }
    const keyOf = (k: unknown) => (isScalar(k) ? k.value : k);
    const seen = new Set(own.map((p) => keyOf(p.key)));
    const out = [...own];
    for (const p of merged) {
      if (seen.has(keyOf(p.key))) continue;
      seen.add(keyOf(p.key));
      out.push(p);
    }
    return out;
  }

  mapping(map: YamlNode, path: (string | number)[]): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const { key, value } of this.pairs(map)) {
      if (!isScalar(key) || typeof key.value !== "string") {
        this.issue(path, `every key must be a string, got ${isScalar(key) ? (key.source ?? String(key.value)) : "a collection"} (envoyproxy/ratelimit: key is not of type string)`, key);
        continue;
      }
      const name = key.value;
      if (!THEIR_KEYS.has(name)) {
        this.issue([...path, name], `unknown key ${JSON.stringify(name)} (envoyproxy/ratelimit refuses it${SLUICE_FIELDS.has(name) ? "; Sluice's additions go in the policy file's rateLimitService section" : ""})`, key);
        continue;
      }
      const field = name === "metadata" ? this.plain(value) : this.field(value, [...path, name], name);
      if (field !== undefined) out[name] = field;
    }
    return out;
  }

  private field(node: unknown, path: (string | number)[], name: string): unknown {
    const n = this.resolve(node);
    if (n === null || n === undefined) return undefined;
    if (isSeq(n)) {
      return n.items.map((item, i) => {
        const it = this.resolve(item);
        if (!isMap(it)) {
          this.issue([...path, i], `expected a mapping (envoyproxy/ratelimit: yaml file contains list of type other than map)`, it);
          return undefined;
        }
        return this.mapping(it, [...path, i]);
      });
    }
    if (isMap(n)) return this.mapping(n, path);
    if (!isScalar(n) || n.value === null) return undefined;
    const source = n.source ?? String(n.value);
    if (typeof n.value === "number" && !INTEGER_SOURCE.test(source)) {
      this.issue(path, `expected a string, an integer or a boolean, got ${source} (envoyproxy/ratelimit: error checking config)`, n);
      return undefined;
    }
    if (STRING_FIELDS.has(name)) return typeof n.value === "string" ? n.value : source;
    return n.value;
  }

  /** `metadata` is any value (theirs does not check inside it). */
  private plain(node: unknown): unknown {
    const n = this.resolve(node);
    return isMap(n) || isSeq(n) || isScalar(n) ? (n as YamlNode).toJS(this.doc, { maxAliasCount: POLICY_FILE_MAX_ALIASES }) : null;
  }
}

/** The node at `path` (explicit keys and indexes; the deepest one found). */
function nodeAt(doc: Document.Parsed, path: readonly (string | number)[]): unknown {
  let node: unknown = doc.contents;
  for (const part of path) {
    let next: unknown;
    if (isMap(node)) next = node.items.find((p) => isScalar(p.key) && p.key.value === part)?.value;
    else if (isSeq(node) && typeof part === "number") next = node.items[part];
    if (next === undefined || next === null) break;
    node = next;
  }
  return node;
}

/** Writes `requests_per_unit: 0` where theirs reads a missing one as 0. */
function fillZeroLimits(domain: Record<string, unknown>, note: (path: string) => void): void {
  const walk = (list: unknown, path: (string | number)[]) => {
    if (!Array.isArray(list)) return;
    list.forEach((d: unknown, i) => {
      if (!d || typeof d !== "object") return;
      const desc = d as Record<string, unknown>;
      const r = desc.rate_limit as Record<string, unknown> | undefined;
      if (r && typeof r === "object" && r.unlimited !== true && r.requests_per_unit === undefined) {
        r.requests_per_unit = 0;
        note(formatPath([...path, "descriptors", i, "rate_limit"]));
      }
      walk(desc.descriptors, [...path, "descriptors", i]);
    });
  };
  walk(domain.descriptors, []);
}

interface ReadDomain {
  file: string;
  domain: EnvoyDomainSpec;
}

function readConfig(file: EnvoyConfigFile, notes: string[]): { ok: true; value: ReadDomain } | { ok: false; issues: ImportIssue[] } {
  const fail = (message: string, path = "", line?: number) => ({ ok: false as const, issues: [{ file: file.name, path, message, ...(line ? { line } : {}) }] });
  if (Buffer.byteLength(file.text, "utf8") > POLICY_FILE_MAX_BYTES) return fail(`the file is over ${POLICY_FILE_MAX_BYTES} bytes`);
  const lines = new LineCounter();
  const docs = parseAllDocuments(file.text, { version: "1.1", lineCounter: lines });
  const all = Array.isArray(docs) ? docs : [];
  const doc = all[0];
  const later = all.slice(1).find((d) => d.contents !== null);
  if (later) {
    const line = later.range ? lines.linePos(later.range[0]).line : undefined;
    return fail("a second YAML document: envoyproxy/ratelimit reads only the first document of a file (put each domain in a file of its own)", "", line);
  }
  if (!doc || doc.contents === null) return fail("expected a domain (envoyproxy/ratelimit: config file cannot have empty domain)", "domain");
  const error = doc.errors[0];
  if (error) return fail(error.message.split("\n")[0]!, "", error.linePos?.[0]?.line);
  if (!isMap(doc.contents)) return fail("expected a mapping with domain and descriptors");
  const reader = new Reader(file.name, doc, lines);
  let raw: Record<string, unknown>;
  try {
    raw = reader.mapping(doc.contents, []);
  } catch (e) {
    if (e instanceof RangeError) return fail(e.message);
    throw e;
  }
  if (reader.issues.length > 0) return { ok: false, issues: reader.issues };
  fillZeroLimits(raw, (path) => notes.push(`${file.name}: ${path}: requests_per_unit absent — envoyproxy/ratelimit reads it as 0 (every request over the limit); written as requests_per_unit: 0`));
  const parsed = envoyDomainSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      if (issue.code === "unrecognized_keys") {
        // Their loader accepts any of its keys at any level and ignores it where it means nothing.
        for (const key of issue.keys) {
          reader.issue([...issue.path, key] as (string | number)[], `${JSON.stringify(key)} does not belong at this level (envoyproxy/ratelimit would ignore it here, silently)`);
        }
      } else reader.issue(issue.path as (string | number)[], issue.message);
    }
    return { ok: false, issues: reader.issues };
  }
  // The file's own order and spelling, which the schema accepted as is.
  return { ok: true, value: { file: file.name, domain: raw as unknown as EnvoyDomainSpec } };
}

/** Their loading of several files: domains unique, or merged (top-level descriptors unique per domain). */
function collectDomains(read: ReadDomain[], mergeDomains: boolean): { domains: ReadDomain[]; issues: ImportIssue[] } {
  const byName = new Map<string, ReadDomain>();
  const issues: ImportIssue[] = [];
  for (const r of read) {
    const first = byName.get(r.domain.domain);
    if (!first) {
      byName.set(r.domain.domain, { file: r.file, domain: structuredClone(r.domain) });
      continue;
    }
    if (!mergeDomains) {
      issues.push({ file: r.file, path: "domain", message: `duplicate domain ${JSON.stringify(r.domain.domain)}, also in ${first.file} (envoyproxy/ratelimit refuses it unless MERGE_DOMAIN_CONFIG is true: pass --merge-domains)` });
      continue;
    }
    const have = new Set((first.domain.descriptors ?? []).map((d) => compositeKey(d.key, d.value)));
    (r.domain.descriptors ?? []).forEach((d, i) => {
      const composite = compositeKey(d.key, d.value);
      if (have.has(composite)) issues.push({ file: r.file, path: `descriptors[${i}]`, message: `duplicate descriptor composite key ${JSON.stringify(composite)} in domain ${r.domain.domain}, also in ${first.file}` });
      have.add(composite);
    });
    first.domain.descriptors = [...(first.domain.descriptors ?? []), ...(r.domain.descriptors ?? [])];
    first.file = `${first.file} + ${r.file}`;
  }
  return { domains: [...byName.values()], issues };
}

const HEADER = (names: string[]) =>
  ` Imported by \`sluice import envoy\` from ${names.join(", ")}.\n` +
  " Applying a policy file replaces the whole draft: to keep your tiers, tenants and keys, import\n" +
  " into an export of it (sluice export > policy.yaml; sluice import envoy ... --into policy.yaml).";

/** Imports `files` (in order) into a policy file's text; issues name file, line and path. */
export function importEnvoyConfigs(files: readonly EnvoyConfigFile[], options: ImportOptions = {}): ImportResult {
  if (files.length === 0) return { ok: false, issues: [{ file: "", path: "", message: "no config file to import" }] };
  const notes: string[] = [];
  const read: ReadDomain[] = [];
  const issues: ImportIssue[] = [];
  for (const file of files) {
    const r = readConfig(file, notes);
    if (r.ok) read.push(r.value);
    else issues.push(...r.issues);
  }
  const collected = collectDomains(read, options.mergeDomains ?? false);
  issues.push(...collected.issues);
  if (issues.length > 0) return { ok: false, issues };
  const imported = collected.domains.map((d) => d.domain);

  let out: Document;
  if (options.into) {
    const into = options.into;
    const policy = parsePolicyInput(into.text);
    if (!policy.ok) return { ok: false, issues: policy.issues.map((i) => ({ file: into.name, path: i.path, message: i.message })) };
    const merged = mergeInto(into, policy.value, collected.domains, options.replace ?? false);
    if (!merged.ok) return merged;
    out = merged.doc;
  } else {
    out = new Document({ version: 1, rateLimitService: { domains: imported } });
    out.commentBefore = HEADER(files.map((f) => f.name));
  }
  const text = out.toString({ lineWidth: 0 });
  // The one proof that `sluice apply -f` takes it: the policy file's own parse, bounds included.
  const check = parsePolicyInput(text);
  if (!check.ok) return { ok: false, issues: check.issues.map((i) => ({ file: options.into?.name ?? "(the imported policy)", path: i.path, message: i.message })) };
  return { ok: true, text, domains: imported.map((d) => d.domain), notes };
}

function mergeInto(into: EnvoyConfigFile, policy: PolicyFile, domains: ReadDomain[], replace: boolean): { ok: true; doc: Document } | { ok: false; issues: ImportIssue[] } {
  const existing = (policy.rateLimitService?.domains ?? []).map((d) => d.domain);
  const issues: ImportIssue[] = [];
  for (const d of domains) {
    const at = existing.indexOf(d.domain.domain);
    if (at >= 0 && !replace) {
      issues.push({ file: into.name, path: `rateLimitService.domains[${at}].domain`, message: `domain ${JSON.stringify(d.domain.domain)} is already in this policy; pass --replace to replace it with the one from ${d.file}` });
    }
  }
  if (issues.length > 0) return { ok: false, issues };
  // Edit the policy's own document, so its comments and layout stay.
  const doc = parseDocument(into.text);
  const found: unknown = doc.get("rateLimitService", true);
  const section = found instanceof YAMLMap ? found : new YAMLMap();
  if (section !== found) doc.set("rateLimitService", section);
  const list: unknown = section.get("domains", true);
  const seq = list instanceof YAMLSeq ? list : new YAMLSeq();
  if (seq !== list) section.set("domains", seq);
  for (const d of domains) {
    const at = existing.indexOf(d.domain.domain);
    const node = doc.createNode(d.domain);
    if (at >= 0) seq.items[at] = node;
    else seq.add(node);
  }
  return { ok: true, doc };
}
