/**
 * The plan of a policy edit: what changes between two drafts. Pure (no I/O, no clock): the same
 * plan is the answer of `sluice apply --dry-run` and of the admin API, the input of the writer in
 * lib/db (one row write and one audit entry per change) and of the role check (lib/auth: which
 * field each change touches).
 *
 * A draft is the policy in the policy file's shape plus its API keys (hashes, never plaintexts).
 * The diff is table-driven: each section of the draft is one entry of SECTIONS — its entity, how
 * its rows are keyed (the natural key: `free/export/tenant/token_bucket`, `acme/ci`), the record the
 * plan shows, and where the row sits in the file (`tiers[0].limits[3]`). A new section of the policy
 * file is one more entry, one more record type, and one more writer table in lib/db.
 */
import type { CompiledBilling } from "./billing-period";
import { canonicalJson } from "./checksum";
import type { PolicySpec } from "./compile";
import { formatDurationMs, parseDurationMs } from "./duration";
import type { PlanChangeRule } from "./plan-change";
import { splitFailureModes, type EnvoyFailureModes } from "./envoy/failure-modes";
import type { EnvoyDomainSpec } from "./envoy/schema";
import { formatPath, type PolicyIssue } from "./policy-file";
import type { Algorithm, FailureMode, Mode, Overage, Period, RegionMode, Scope, Share, TenantStatus } from "./types";

/** An API key as a draft holds it: the hash and display prefix, never the plaintext. */
export interface KeyState {
  tenant: string;
  name: string;
  /** sha256 hex of the plaintext; null for a key the writer generates (listed without `key`). */
  hash: string | null;
  /** The first characters of the plaintext, shown in lists; null while the key is to be generated. */
  prefix: string | null;
  revoked: boolean;
}

/** Everything an edit can change: the policy (the file's shape, no keys) and the API keys. */
export interface Draft {
  spec: PolicySpec;
  keys: KeyState[];
  /**
   * False when the database has no settings row yet (a fresh install reads as the defaults): the
   * next applied edit creates it. Drafts that edits produce leave it out.
   */
  settingsStored?: boolean;
}

/** The record the plan shows for each entity, in the file's notation (durations as `1m`). */
export type PlanRecords = {
  settings: { failureMode: FailureMode; planChange?: PlanChangeRule };
  /** The policy file's `requirements` block as written (lib/policy/requirements.ts). */
  requirements: NonNullable<PolicySpec["requirements"]>;
  /** The policy file's `approval` block with its defaults (lib/policy/approval.ts). */
  approval: NonNullable<PolicySpec["approval"]>;
  operation: { name: string; match: string[]; cost: number; failureMode?: FailureMode; position: number };
  tier: { name: string; weight: number; thresholds?: number[]; position: number };
  limit: {
    tier: string; operation: string; scope: Scope; algorithm: Algorithm; limit: number; window?: string; burst?: number;
    precision?: number; mode: Mode; maxDelay?: string; leaseTtl?: string; regions?: RegionMode; position: number;
  };
  quota: { tier: string; operation: string; period: Period; limit: number; overage: Overage; position: number };
  globalCap: { operation: string; limit: number; window: string; share: Share; regions?: RegionMode; position: number };
  tenant: { slug: string; name: string; tier: string; status: TenantStatus; billing?: CompiledBilling; thresholds?: number[] };
  override: {
    tenant: string; operation: string; scope?: Scope; period?: Period; limit: number; algorithm?: Algorithm;
    window?: string; burst?: number; overage?: Overage; expiresAt?: string; position: number;
  };
  key: { tenant: string; name: string; prefix: string; revoked?: true };
  /** The `rateLimitService` section's settings; a row only when they differ from the defaults. */
  envoySettings: { unknownDomain: "ok" | "error"; shadowMode: boolean };
  /** One Envoy domain: its document without rule failure modes, which `failureModes` holds by path. */
  envoyDomain: { domain: string; document: EnvoyDomainSpec; failureModes?: EnvoyFailureModes; position: number };
};
export type PlanEntity = keyof PlanRecords;

/** One planned change. `before` is null for a creation, `after` for a deletion. */
export type PlanChange<E extends PlanEntity = PlanEntity> = {
  [K in E]: {
    entity: K;
    /** Natural key: `free/export/tenant/token_bucket`, `acme/ci`, … */
    key: string;
    /** Where the row is in the file (in the new draft; in the old one for a deletion): `tiers[0].limits[3]`. */
    path: string;
    before: PlanRecords[K] | null;
    after: PlanRecords[K] | null;
  };
}[E];

export interface PolicyPlan {
  created: PlanChange[];
  changed: PlanChange[];
  deleted: PlanChange[];
  /** Things the edit asks for that will not happen, and why. */
  warnings: string[];
}

// ---------------------------------------------------------------------------------------------
// Natural keys: one definition, used by the diff here and by lib/db to find each row's id.

const normDuration = (d: string | undefined) => (d === undefined ? undefined : formatDurationMs(parseDurationMs(d) ?? 0));
const normInstant = (s: string | undefined) => (s === undefined ? undefined : new Date(s).toISOString());

export const naturalKeys = {
  limit: (tier: string, l: { operation: string; scope: string; algorithm: string }) => `${tier}/${l.operation}/${l.scope}/${l.algorithm}`,
  quota: (tier: string, q: { operation: string; period: string }) => `${tier}/${q.operation}/${q.period}`,
  globalCap: (g: { operation: string; window: string }) => `${g.operation}/${normDuration(g.window)}`,
  key: (tenant: string, name: string) => `${tenant}/${name}`,
  /** `acme/export/scope:tenant`; a second override of the same cell gets `#2`, and so on. */
  overrides(tenant: string, overrides: readonly { operation: string; scope?: string | null; period?: string | null }[]): string[] {
    const seen = new Map<string, number>();
    return overrides.map((o) => {
      const base = `${tenant}/${o.operation}/${o.scope ? `scope:${o.scope}` : `period:${o.period}`}`;
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      return n === 0 ? base : `${base}#${n + 1}`;
    });
  },
};

// ---------------------------------------------------------------------------------------------
// The sections

interface Row<E extends PlanEntity> {
  key: string;
  path: (string | number)[];
  record: PlanRecords[E];
  /** Compared besides the record but never shown (a key's hash: a rotation keeps the prefix). */
  identity?: string;
}

interface Section<E extends PlanEntity> {
  entity: E;
  rows(draft: Draft): Row<E>[];
}

/** Drops undefined members, so `{a: undefined}` and `{}` compare (and print) equal. */
/** `regions: local` is the default: written or not, the same record (no change in the plan). */
const notLocal = (regions: RegionMode | undefined) => (regions === "local" ? undefined : regions);

function compact<T extends object>(value: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== undefined && v !== null) out[k] = v;
  return out as T;
}

const section = <E extends PlanEntity>(entity: E, rows: (draft: Draft) => Row<E>[]): Section<E> => ({ entity, rows });

/** Parents before children: the writer creates in this order and deletes in the reverse one. */
export const SECTIONS = [
  section("settings", (d) =>
    d.settingsStored === false ? [] : [{ key: "defaults", path: ["defaults"], record: compact({ failureMode: d.spec.defaults.failureMode, planChange: d.spec.defaults.planChange }) }],
  ),
  section("requirements", (d) =>
    d.spec.requirements === undefined ? [] : [{ key: "block", path: ["requirements"], record: structuredClone(d.spec.requirements) }],
  ),
  section("approval", (d) => (d.spec.approval === undefined ? [] : [{ key: "block", path: ["approval"], record: { ...d.spec.approval } }])),
  section("operation", (d) =>
    d.spec.operations.map((o, position) => ({
      key: o.name,
      path: ["operations", position],
      record: compact({ name: o.name, match: [...o.match], cost: o.cost, failureMode: o.failureMode, position }),
    })),
  ),
  section("tier", (d) =>
    d.spec.tiers.map((t, position) => ({ key: t.name, path: ["tiers", position], record: compact({ name: t.name, weight: t.weight, thresholds: t.thresholds, position }) })),
  ),
  section("limit", (d) =>
    d.spec.tiers.flatMap((t, ti) =>
      t.limits.map((l, position) => ({
        key: naturalKeys.limit(t.name, l),
        path: ["tiers", ti, "limits", position],
        record: compact({
          tier: t.name, operation: l.operation, scope: l.scope, algorithm: l.algorithm, limit: l.limit,
          window: normDuration(l.window), burst: l.burst, precision: l.precision, mode: l.mode,
          maxDelay: normDuration(l.maxDelay), leaseTtl: normDuration(l.leaseTtl), regions: notLocal(l.regions), position,
        }),
      })),
    ),
  ),
  section("quota", (d) =>
    d.spec.tiers.flatMap((t, ti) =>
      t.quotas.map((q, position) => ({
        key: naturalKeys.quota(t.name, q),
        path: ["tiers", ti, "quotas", position],
        record: { tier: t.name, operation: q.operation, period: q.period, limit: q.limit, overage: q.overage, position },
      })),
    ),
  ),
  section("globalCap", (d) =>
    d.spec.globalCaps.map((g, position) => ({
      key: naturalKeys.globalCap(g),
      path: ["globalCaps", position],
      record: compact({ operation: g.operation, limit: g.limit, window: normDuration(g.window)!, share: g.share, regions: notLocal(g.regions), position }),
    })),
  ),
  section("tenant", (d) =>
    d.spec.tenants.map((t, ti) => ({
      key: t.slug,
      path: ["tenants", ti],
      record: compact({ slug: t.slug, name: t.name, tier: t.tier, status: t.status, billing: t.billing, thresholds: t.thresholds }),
    })),
  ),
  section("override", (d) =>
    d.spec.tenants.flatMap((t, ti) => {
      const keys = naturalKeys.overrides(t.slug, t.overrides);
      return t.overrides.map((o, position) => ({
        key: keys[position],
        path: ["tenants", ti, "overrides", position],
        record: compact({
          tenant: t.slug, operation: o.operation, scope: o.scope, period: o.period, limit: o.limit, algorithm: o.algorithm,
          window: normDuration(o.window), burst: o.burst, overage: o.overage, expiresAt: normInstant(o.expiresAt), position,
        }),
      }));
    }),
  ),
  section("envoySettings", (d) => {
    const s = d.spec.rateLimitService;
    return s && (s.unknownDomain !== "ok" || s.shadowMode)
      ? [{ key: "settings", path: ["rateLimitService"], record: { unknownDomain: s.unknownDomain, shadowMode: s.shadowMode } }]
      : [];
  }),
  section("envoyDomain", (d) =>
    (d.spec.rateLimitService?.domains ?? []).map((domain, position) => {
      const { document, failureModes } = splitFailureModes(domain);
      return { key: domain.domain, path: ["rateLimitService", "domains", position], record: compact({ domain: domain.domain, document, failureModes, position }) };
    }),
  ),
  section("key", (d) => {
    const tenantIndex = new Map(d.spec.tenants.map((t, i) => [t.slug, i]));
    return d.keys.map((k) => ({
      key: naturalKeys.key(k.tenant, k.name),
      path: ["tenants", tenantIndex.get(k.tenant) ?? -1, "keys"],
      record: compact({ tenant: k.tenant, name: k.name, prefix: k.prefix ?? "(generated on apply)", revoked: k.revoked ? (true as const) : undefined }),
      identity: k.hash ?? "",
    }));
  }),
] as const;

// ---------------------------------------------------------------------------------------------
// The diff

export function emptyPlan(): PolicyPlan {
  return { created: [], changed: [], deleted: [], warnings: [] };
}

export function planIsEmpty(plan: PolicyPlan): boolean {
  return plan.created.length + plan.changed.length + plan.deleted.length === 0;
}

function diffSection<E extends PlanEntity>(s: Section<E>, current: Draft, desired: Draft, plan: PolicyPlan): void {
  const before = new Map(s.rows(current).map((r) => [r.key, r]));
  const after = s.rows(desired);
  const change = (key: string, path: (string | number)[], b: PlanRecords[E] | null, a: PlanRecords[E] | null) =>
    ({ entity: s.entity, key, path: formatPath(path), before: b, after: a }) as PlanChange;
  for (const want of after) {
    const have = before.get(want.key);
    if (!have) plan.created.push(change(want.key, want.path, null, want.record));
    else if (canonicalJson(have.record) !== canonicalJson(want.record) || (have.identity ?? "") !== (want.identity ?? "")) {
      plan.changed.push(change(want.key, want.path, have.record, want.record));
    }
  }
  const wanted = new Set(after.map((r) => r.key));
  for (const have of before.values()) if (!wanted.has(have.key)) plan.deleted.push(change(have.key, have.path, have.record, null));
}

/** Every change that turns `current` into `desired`, section by section in SECTIONS order. */
export function planPolicy(current: Draft, desired: Draft): PolicyPlan {
  const plan = emptyPlan();
  for (const s of SECTIONS) diffSection(s as Section<PlanEntity>, current, desired, plan);
  return plan;
}

/**
 * The fields a change touches: those whose value differs between before and after (for a creation,
 * every field it sets; for a deletion, every field it had). `implicitBefore` stands for a row that
 * does not exist yet but reads as defaults (no settings row means `failureMode: open`).
 */
export function changedFields(change: PlanChange, implicitBefore?: Record<string, unknown>): string[] {
  const before = (change.before ?? implicitBefore ?? {}) as Record<string, unknown>;
  const after = (change.after ?? {}) as Record<string, unknown>;
  const fields = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...fields].filter((f) => canonicalJson(before[f] ?? null) !== canonicalJson(after[f] ?? null));
}

// ---------------------------------------------------------------------------------------------
// Keys listed in a policy file

/** A key as a policy file lists it, with the plaintext already hashed. */
export interface FileKey {
  tenant: string;
  name: string;
  hash: string | null;
  prefix: string | null;
  /** Its path in the file, for the issue that names it: `tenants[1].keys[2].key`. */
  path: string;
}

/**
 * The keys after applying a file: keys the file lists are created (or rotated, when the plaintext
 * differs, which also lifts a revocation), keys it does not list are left alone (a file, often an
 * export, cannot know keys issued out of band; deleting them would revoke live clients), and keys
 * of tenants the file drops go with their tenant. A revoked key is never revived by its own
 * plaintext. A plaintext already used by another key is an issue at its path.
 */
export function mergeFileKeys(
  current: readonly KeyState[],
  fileTenants: readonly string[],
  fileKeys: readonly FileKey[],
): { keys: KeyState[]; issues: PolicyIssue[]; warnings: string[] } {
  const kept = new Set(fileTenants);
  const keys = current.filter((k) => kept.has(k.tenant)).map((k) => ({ ...k }));
  const byName = new Map(keys.map((k) => [naturalKeys.key(k.tenant, k.name), k]));
  const owner = new Map(current.filter((k) => k.hash !== null).map((k) => [k.hash!, naturalKeys.key(k.tenant, k.name)]));
  const claimed = new Map<string, string>();
  const issues: PolicyIssue[] = [];
  const warnings: string[] = [];
  for (const f of fileKeys) {
    const id = naturalKeys.key(f.tenant, f.name);
    if (f.hash !== null) {
      const holder = owner.get(f.hash);
      const twin = claimed.get(f.hash);
      if ((holder !== undefined && holder !== id) || (twin !== undefined && twin !== id)) {
        issues.push({ path: f.path, message: "this key is already in use by another key; keys must be unique" });
        continue;
      }
      claimed.set(f.hash, id);
    }
    const existing = byName.get(id);
    if (!existing) {
      const created: KeyState = { tenant: f.tenant, name: f.name, hash: f.hash, prefix: f.prefix, revoked: false };
      keys.push(created);
      byName.set(id, created);
    } else if (f.hash === null || existing.hash === f.hash) {
      if (existing.revoked) warnings.push(`key ${id} is revoked; apply leaves it revoked (list a new plaintext to rotate it)`);
    } else {
      Object.assign(existing, { hash: f.hash, prefix: f.prefix, revoked: false });
    }
  }
  return { keys, issues, warnings };
}
