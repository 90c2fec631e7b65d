/**
 * The Envoy domains of the draft beside the live version's, for the read-only Envoy pages: which
 * domains there are, which differ from live, and each domain's tree in words
 * (lib/policy/envoy/describe.ts). Editing happens in the policy file (`sluice import envoy`,
 * `sluice apply`); these pages show what the draft holds and what publishing would change.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { canonicalJson } from "../../policy/checksum";
import type { CompiledEnvoyDomain, CompiledEnvoyService } from "../../policy/envoy/compiled";
import { diffEnvoyServices, domainLines, type EnvoyChange, type EnvoyRuleLine } from "../../policy/envoy/describe";
import { readDraftState } from "./draft-view";

export type EnvoyDomainState = "unchanged" | "changed" | "new in the draft" | "removed in the draft" | "not published";

export interface EnvoyDomainRow {
  domain: string;
  /** Descriptors that limit or whitelist something themselves, in the draft (else live). */
  rules: number;
  state: EnvoyDomainState;
}

export interface EnvoyOverview {
  liveVersion: number | null;
  /** The draft's issues when it does not compile (the page then shows live only). */
  issues: { path: string; message: string }[];
  settings: { draft: Pick<CompiledEnvoyService, "unknownDomain" | "shadowMode"> | null; live: Pick<CompiledEnvoyService, "unknownDomain" | "shadowMode"> | null };
  domains: EnvoyDomainRow[];
}

const ruleCount = (d: CompiledEnvoyDomain) => domainLines(d).filter((l) => l.rule).length;

async function sides(db: PrismaClient) {
  const state = await readDraftState(db);
  return { state, draft: state.draft?.rateLimitService, live: state.live?.rateLimitService };
}

export async function readEnvoyOverview(db: PrismaClient): Promise<EnvoyOverview> {
  const { state, draft, live } = await sides(db);
  const liveVersion = state.live?.version ?? null;
  const liveByName = new Map((live?.domains ?? []).map((d) => [d.domain, d]));
  const rows: EnvoyDomainRow[] = [];
  for (const d of draft?.domains ?? []) {
    const l = liveByName.get(d.domain);
    const stateOf: EnvoyDomainState = liveVersion === null ? "not published" : !l ? "new in the draft" : canonicalJson(l) === canonicalJson(d) ? "unchanged" : "changed";
    rows.push({ domain: d.domain, rules: ruleCount(d), state: stateOf });
  }
  const inDraft = new Set(rows.map((r) => r.domain));
  // With a draft that compiles, a live domain it lacks is being removed; without one, show live as it is.
  for (const l of live?.domains ?? []) if (!inDraft.has(l.domain)) rows.push({ domain: l.domain, rules: ruleCount(l), state: state.draft ? "removed in the draft" : "unchanged" });
  const settingsOf = (s: CompiledEnvoyService | undefined) => (s ? { unknownDomain: s.unknownDomain, shadowMode: s.shadowMode } : null);
  return { liveVersion, issues: state.issues, settings: { draft: settingsOf(draft), live: settingsOf(live) }, domains: rows };
}

export interface EnvoyDomainView {
  domain: string;
  liveVersion: number | null;
  draftCompiles: boolean;
  /** The draft's tree (null: not in the draft, or the draft does not compile). */
  draft: EnvoyRuleLine[] | null;
  /** The live tree (null: not live). */
  live: EnvoyRuleLine[] | null;
  /** What publishing the draft would change in this domain, rule by rule. */
  changes: EnvoyChange[];
}

/** One domain's trees, or null when neither the draft nor live has it. */
export async function readEnvoyDomain(db: PrismaClient, domain: string): Promise<EnvoyDomainView | null> {
  const { state, draft, live } = await sides(db);
  const d = draft?.domains.find((x) => x.domain === domain);
  const l = live?.domains.find((x) => x.domain === domain);
  if (!d && !l) return null;
  const only = (x: CompiledEnvoyDomain | undefined): CompiledEnvoyService | undefined => (x ? { unknownDomain: "ok", shadowMode: false, domains: [x] } : undefined);
  return {
    domain,
    liveVersion: state.live?.version ?? null,
    draftCompiles: state.draft !== null,
    draft: d ? domainLines(d) : null,
    live: l ? domainLines(l) : null,
    changes: state.draft ? diffEnvoyServices(only(l), only(d)) : [],
  };
}
