/**
 * Envoy domains in words, for people: each rule as a sentence (`database=users: 500 per second,
 * shadow`), a domain as its tree, and what changed between two compiled sections rule by rule
 * (the Policy page's diff, the version history). Pure; decides nothing.
 */
import { canonicalJson } from "../checksum";
import { formatDurationMs } from "../duration";
import type { CompiledEnvoyDescriptor, CompiledEnvoyDomain, CompiledEnvoyRule, CompiledEnvoyService } from "./compiled";
import { compositeKey } from "./schema";
import { UNIT_SECONDS, UNKNOWN_UNIT } from "./units";

/** How one descriptor selects: `database=users`, `to_number` (each value), `files=files/* (shared)`. */
export function selectorText(d: CompiledEnvoyDescriptor): string {
  if (d.value === "") return d.key;
  if (!compositeKey(d.key, d.value).includes("*")) return `${d.key}=${d.value}`;
  return `${d.key}=${d.value} (${d.shareThreshold ? "one counter for all matches" : "each match apart"})`;
}

function windowText(r: CompiledEnvoyRule): string {
  if (r.period) return `calendar ${r.period} (UTC)`;
  if (r.unit !== UNKNOWN_UNIT && UNIT_SECONDS[r.unit] * 1000 === r.windowMs) return r.unit.toLowerCase();
  return formatDurationMs(r.windowMs);
}

/** What a descriptor does, in words: `500 per second, shadow`, `unlimited`, `no limit (whitelisted)`. */
export function ruleText(d: CompiledEnvoyDescriptor): string {
  const r = d.rule;
  if (!r) return d.descriptors.length === 0 ? "no limit (whitelisted)" : "no limit of its own";
  const parts: string[] = [];
  if (r.unlimited) parts.push("unlimited (never counted)");
  else {
    parts.push(`${r.requestsPerUnit} per ${windowText(r)}${r.requestsPerUnit === 0 ? " (every request over the limit)" : ""}`);
    if (r.counting !== "envoy" && r.counting !== "quota") parts.push(r.counting);
    if ((r.counting === "token_bucket" || r.counting === "leaky_bucket") && r.burst !== r.requestsPerUnit) parts.push(`burst ${r.burst}`);
    if (r.counting === "sliding_window_counter" && r.precision !== 1) parts.push(`precision ${r.precision}`);
  }
  if (d.value === "" && !r.unlimited) parts.push("each value apart");
  if (d.shadowMode) parts.push("shadow");
  if (d.quotaMode) parts.push("quota mode");
  if (r.name) parts.push(`named ${JSON.stringify(r.name)}`);
  if (r.replaces.length > 0) parts.push(`replaces ${r.replaces.map((n) => JSON.stringify(n)).join(", ")}`);
  if (r.failureMode) parts.push(`failure mode ${r.failureMode}`);
  if (d.detailedMetric) parts.push("detailed metric");
  if (d.valueToMetric) parts.push("values in metrics");
  return parts.join(", ");
}

export interface EnvoyRuleLine {
  /** 0 for a top-level descriptor. */
  depth: number;
  /** The selectors from the top: `message_type=marketing › to_number`. */
  path: string;
  /** Stable across edits of numbers: the composite keys from the top. */
  key: string;
  /** How this descriptor selects: `database=users`. */
  selector: string;
  /** What it does: `500 per second, shadow`. */
  text: string;
  /** `selector: what it does`. */
  sentence: string;
  /** Whether the descriptor limits (or whitelists) anything itself, rather than only holding children. */
  rule: boolean;
}

/** Every descriptor of a domain in tree order, each with its sentence. */
export function domainLines(domain: CompiledEnvoyDomain): EnvoyRuleLine[] {
  const lines: EnvoyRuleLine[] = [];
  const walk = (list: readonly CompiledEnvoyDescriptor[], depth: number, path: string[], keys: string[]) => {
    for (const d of list) {
      const p = [...path, selectorText(d)];
      const k = [...keys, compositeKey(d.key, d.value)];
      const own = d.rule !== null || d.descriptors.length === 0;
      const selector = p[p.length - 1]!;
      const text = ruleText(d);
      lines.push({ depth, path: p.join(" › "), key: JSON.stringify(k), selector, text, sentence: `${selector}: ${text}`, rule: own });
      walk(d.descriptors, depth + 1, p, k);
    }
  };
  walk(domain.descriptors, 0, [], []);
  return lines;
}

export interface EnvoyChange {
  kind: "added" | "changed" | "removed";
  entity: "envoy domain" | "envoy rule" | "envoy setting";
  text: string;
}

const EMPTY: CompiledEnvoyService = { unknownDomain: "ok", shadowMode: false, domains: [] };

/** What turns `before` into `after`, rule by rule (a new or removed domain is one line). */
export function diffEnvoyServices(before: CompiledEnvoyService | undefined, after: CompiledEnvoyService | undefined): EnvoyChange[] {
  const a = before ?? EMPTY;
  const b = after ?? EMPTY;
  const out: EnvoyChange[] = [];
  if (a.unknownDomain !== b.unknownDomain) out.push({ kind: "changed", entity: "envoy setting", text: `Envoy: unknown domains answer ${a.unknownDomain} → ${b.unknownDomain}` });
  if (a.shadowMode !== b.shadowMode) out.push({ kind: "changed", entity: "envoy setting", text: `Envoy: global shadow mode ${a.shadowMode ? "on" : "off"} → ${b.shadowMode ? "on" : "off"}` });
  const old = new Map(a.domains.map((d) => [d.domain, d]));
  const now = new Map(b.domains.map((d) => [d.domain, d]));
  const ruleCount = (d: CompiledEnvoyDomain) => domainLines(d).filter((l) => l.rule).length;
  for (const [name, d] of now) {
    const prev = old.get(name);
    if (!prev) {
      out.push({ kind: "added", entity: "envoy domain", text: `Envoy domain ${name} added (${ruleCount(d)} rule(s))` });
      continue;
    }
    if (canonicalJson(prev) === canonicalJson(d)) continue;
    const lines = out.length;
    const was = new Map(domainLines(prev).filter((l) => l.rule).map((l) => [l.key, l]));
    for (const line of domainLines(d).filter((l) => l.rule)) {
      const w = was.get(line.key);
      if (!w) out.push({ kind: "added", entity: "envoy rule", text: `Envoy ${name}: ${line.path} — ${line.text}` });
      else if (w.text !== line.text || w.path !== line.path) out.push({ kind: "changed", entity: "envoy rule", text: `Envoy ${name}: ${line.path} — ${w.text} → ${line.text}` });
      was.delete(line.key);
    }
    for (const line of was.values()) out.push({ kind: "removed", entity: "envoy rule", text: `Envoy ${name}: ${line.path} — ${line.text}` });
    // What sentences do not show (metadata, the order of wildcards) still changes the domain.
    if (out.length === lines) out.push({ kind: "changed", entity: "envoy domain", text: `Envoy domain ${name}: metadata or the order of its descriptors changed` });
  }
  for (const name of old.keys()) if (!now.has(name)) out.push({ kind: "removed", entity: "envoy domain", text: `Envoy domain ${name} removed` });
  return out;
}

