/**
 * Which rule of a domain applies to one request descriptor: envoyproxy/ratelimit's `GetLimit`
 * (src/config/config_impl.go), written again from its behaviour. Pure.
 *
 * The request's entries are walked level by level. At each level an entry matches, in this order:
 * the descriptor whose composite key is `key_value` exactly; else the first wildcard descriptor (in
 * declaration order) whose composite `key_pattern` matches `key_value`, each `*` matching any run of
 * characters; else the key-only descriptor `key`. A descriptor without children ends the walk. The
 * rule that applies is the one of the descriptor the LAST entry matched: a request with more
 * entries than the config has levels, or one that ends on a level without a `rate_limit`, has none.
 *
 * The tree is indexed once per compiled document (a WeakMap, so a new document gets a new index):
 * composite key → node, wildcards pre-split on `*`, so a descriptor costs one Map lookup per entry.
 */
import type { CompiledEnvoyDescriptor, CompiledEnvoyRule, CompiledEnvoyService } from "./compiled";
import { compositeKey } from "./schema";

interface NodeIndex {
  descriptor: CompiledEnvoyDescriptor;
  children: LevelIndex;
}

interface WildcardEntry {
  /** The composite key with its `*`s, e.g. `files_files/*`. */
  composite: string;
  parts: string[];
  node: NodeIndex;
}

export interface LevelIndex {
  byComposite: Map<string, NodeIndex>;
  wildcards: WildcardEntry[];
}

function indexLevel(descriptors: readonly CompiledEnvoyDescriptor[]): LevelIndex {
  const level: LevelIndex = { byComposite: new Map(), wildcards: [] };
  for (const d of descriptors) {
    const composite = compositeKey(d.key, d.value);
    const node: NodeIndex = { descriptor: d, children: indexLevel(d.descriptors) };
    level.byComposite.set(composite, node);
    if (composite.includes("*")) level.wildcards.push({ composite, parts: composite.split("*"), node });
  }
  return level;
}

const indexes = new WeakMap<CompiledEnvoyService, Map<string, LevelIndex>>();

/** The index of `domain`'s tree, or null when the section has no such domain. */
export function envoyDomainIndex(service: CompiledEnvoyService, domain: string): LevelIndex | null {
  let domains = indexes.get(service);
  if (!domains) {
    domains = new Map(service.domains.map((d) => [d.domain, indexLevel(d.descriptors)]));
    indexes.set(service, domains);
  }
  return domains.get(domain) ?? null;
}

/** Whether `text` matches a pattern split on `*` (each `*` any run of characters, the empty one too). */
export function wildcardMatches(parts: readonly string[], text: string): boolean {
  if (parts.length === 1) return parts[0] === text;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  let fixed = 0;
  for (const p of parts) fixed += p.length;
  if (text.length < fixed || !text.startsWith(first) || !text.endsWith(last)) return false;
  let rest = text.slice(first.length, text.length - last.length);
  for (let i = 1; i < parts.length - 1; i++) {
    const at = rest.indexOf(parts[i]!);
    if (at < 0) return false;
    rest = rest.slice(at + parts[i]!.length);
  }
  return true;
}

const trimPrefix = (text: string, prefix: string) => (text.startsWith(prefix) ? text.slice(prefix.length) : text);

export interface EnvoyEntry {
  key?: string;
  value?: string;
}

export interface EnvoyMatch {
  descriptor: CompiledEnvoyDescriptor;
  rule: CompiledEnvoyRule;
  /**
   * Per entry, the wildcard pattern (its value part, `files/*`) that entry counts as, where a
   * `share_threshold` descriptor matched it; null where the entry's own value counts. null when
   * no entry shares.
   */
  shared: (string | null)[] | null;
  /** Their stats key (`domain.key_value.key`): `detailed_metric` and `value_to_metric` add runtime values. */
  metricKey: string;
  /**
   * The matched descriptor's path as configured (`message_type_marketing.to_number`, a wildcard as
   * written): bounded by the config whatever the request's values, so it may label a metric.
   */
  configPath: string;
}

/** The rule `entries` select in a domain's tree, or null (no rule: the descriptor is not limited). */
export function matchEnvoyDescriptor(root: LevelIndex, domain: string, entries: readonly EnvoyEntry[]): EnvoyMatch | null {
  let level = root;
  let matched: NodeIndex | null = null;
  let shared: (string | null)[] | null = null;
  // The two metric keys theirs builds on the way: every value (detailed_metric), or values only where
  // the config asks (value_to_metric, wildcard patterns).
  let detailed = domain;
  let enhanced = domain;
  const path: string[] = [];
  for (let i = 0; i < entries.length; i++) {
    const key = entries[i]!.key ?? "";
    const value = entries[i]!.value ?? "";
    const composite = `${key}_${value}`;
    detailed += `.${composite}`;
    let next = level.byComposite.get(composite);
    let wildcard: string | null = null;
    if (!next) {
      for (const w of level.wildcards) {
        if (wildcardMatches(w.parts, composite)) {
          next = w.node;
          wildcard = w.composite;
          break;
        }
      }
    }
    const byValue = next !== undefined;
    next ??= level.byComposite.get(key);
    if (wildcard !== null && next?.descriptor.shareThreshold) {
      shared ??= new Array<string | null>(entries.length).fill(null);
      shared[i] = trimPrefix(wildcard, `${key}_`);
    }
    let shown = "";
    if (next && wildcard !== null) shown = shared?.[i] ?? (next.descriptor.valueToMetric ? value : trimPrefix(wildcard, `${key}_`));
    else if (next && (byValue || next.descriptor.valueToMetric)) shown = value;
    enhanced += shown ? `.${key}_${shown}` : `.${key}`;
    if (next) path.push(next.descriptor.value === "" ? next.descriptor.key : `${next.descriptor.key}_${next.descriptor.value}`);

    if (next?.descriptor.rule && i === entries.length - 1) matched = next;
    if (!next || next.descriptor.descriptors.length === 0) break;
    level = next.children;
  }
  if (!matched) return null;
  const descriptor = matched.descriptor;
  let metricKey = enhanced;
  if (descriptor.detailedMetric) {
    metricKey = shared
      ? domain + entries.map((e, i) => `.${shared![i] !== null ? `${e.key ?? ""}_${shared![i]}` : compositeKey(e.key ?? "", e.value)}`).join("")
      : detailed;
  }
  return { descriptor, rule: descriptor.rule!, shared, metricKey, configPath: path.join(".") };
}

/** Their stats key of a descriptor carrying its own `limit`: the domain and every entry. */
export function overrideMetricKey(domain: string, entries: readonly EnvoyEntry[]): string {
  return `${domain}.${entries.map((e) => compositeKey(e.key ?? "", e.value)).join(".")}`;
}
