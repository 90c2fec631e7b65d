/**
 * `sluice apply -f FILE` and `POST /api/v1/policy/apply`: make Postgres hold exactly the policy of a
 * file. Declarative: operations, tiers, limits, quotas, global caps, tenants and overrides absent
 * from the file are deleted. One transaction, with an audit entry per change: a file with one bad
 * field writes nothing, and applying the same file twice changes nothing the second time.
 *
 * API keys are the exception: keys listed in the file are created (or rotated, when the plaintext
 * differs), keys NOT listed are left alone. Keys are secrets that `export` cannot print, and most
 * are issued by `sluice keys create` or the UI, so a file (often an export) cannot know them all;
 * deleting what it does not list would revoke live clients' keys by accident. Revocation is an
 * explicit act (`sluice keys revoke`). A key listed without plaintext is created with a generated
 * secret, returned once. A revoked key is never resurrected by a file repeating its plaintext.
 *
 * Applying changes the draft only: decision servers see it after `publish`.
 */
import { parse as parseYaml, YAMLParseError } from "yaml";
import { Prisma, type PrismaClient } from "../generated/prisma/client";
import { writeAuditMany, type AuditInput, type AuditJson } from "../db/audit";
import {
  limitRowToSpec,
  loadPolicyRows,
  lockPolicy,
  newId,
  overrideRowToSpec,
  quotaRowToSpec,
  requirementsRowToSpec,
  rowsToSpec,
  type PolicyRows,
} from "../db/policy-repo";
import type { PolicySpec } from "../policy/compile";
import type { Tx } from "../db/client";
import { canonicalJson } from "../policy/checksum";
import { formatDurationMs, parseDurationMs } from "../policy/duration";
import { formatPath, parsePolicyFile, type PolicyFile, type PolicyIssue } from "../policy/policy-file";
import { invalidPolicy } from "./errors";
import { displayPrefix, generateSecret, hashSecret } from "./secrets";

export type PlanEntity = "settings" | "requirements" | "operation" | "tier" | "limit" | "quota" | "globalCap" | "tenant" | "override" | "key";

/** One planned change. `before`/`after` are in the file's notation; keys never show a secret. */
export interface PlanChange {
  entity: PlanEntity;
  /** Natural key: `free/export/tenant/token_bucket`, `acme/ci`, … */
  key: string;
  before: Record<string, AuditJson> | null;
  after: Record<string, AuditJson> | null;
}

export interface PolicyPlan {
  created: PlanChange[];
  changed: PlanChange[];
  deleted: PlanChange[];
  /** Things the file asks for that apply will not do, and why. */
  warnings: string[];
}

export interface ApplyResult {
  plan: PolicyPlan;
  dryRun: boolean;
  /** False when the plan was empty (nothing written, not even audit entries). */
  applied: boolean;
  /** Keys listed without plaintext and created with a generated secret: shown once, here. */
  generatedKeys: { tenant: string; name: string; key: string }[];
}

export type PolicyInput = string | Uint8Array | Record<string, unknown>;

/**
 * Decodes YAML or JSON text (JSON is YAML) or takes an object, then validates it. Syntax errors
 * name their line and column; validation errors name their path.
 */
export function parsePolicyInput(input: PolicyInput): ReturnType<typeof parsePolicyFile> {
  let value: unknown = input;
  if (typeof input === "string" || input instanceof Uint8Array) {
    const text = typeof input === "string" ? input : new TextDecoder().decode(input);
    try {
      value = parseYaml(text, { prettyErrors: true, maxAliasCount: 100 });
    } catch (error) {
      if (error instanceof YAMLParseError) {
        const pos = error.linePos?.[0];
        const where = pos ? `line ${pos.line}, column ${pos.col}` : "";
        return { ok: false, issues: [{ path: where, message: error.message.split("\n")[0] }] };
      }
      throw error;
    }
    if (value === null || value === undefined) return { ok: false, issues: [{ path: "", message: "the file is empty" }] };
  }
  return parsePolicyFile(value);
}

// ---------------------------------------------------------------------------------------------
// Desired and current state, as records keyed by natural key, in the file's notation.

type Rec = Record<string, AuditJson>;

interface State {
  settings: Map<string, Rec>;
  requirements: Map<string, Rec>;
  operation: Map<string, Rec>;
  tier: Map<string, Rec>;
  limit: Map<string, Rec>;
  quota: Map<string, Rec>;
  globalCap: Map<string, Rec>;
  tenant: Map<string, Rec>;
  override: Map<string, Rec>;
}

/** Drops undefined members so `{a: undefined}` and `{}` compare equal. */
function rec(value: Record<string, unknown>): Rec {
  const out: Rec = {};
  for (const [k, v] of Object.entries(value)) if (v !== undefined && v !== null) out[k] = v as AuditJson;
  return out;
}

const normDur = (d: string | undefined) => (d === undefined ? undefined : formatDurationMs(parseDurationMs(d)!));
const normInstant = (s: string | undefined) => (s === undefined ? undefined : new Date(s).toISOString());

function overrideKey(tenant: string, o: { operation: string; scope?: string | null; period?: string | null }, seen: Map<string, number>) {
  const base = `${tenant}/${o.operation}/${o.scope ? `scope:${o.scope}` : `period:${o.period}`}`;
  const n = seen.get(base) ?? 0;
  seen.set(base, n + 1);
  return n === 0 ? base : `${base}#${n + 1}`;
}

function emptyState(): State {
  return {
    settings: new Map(), requirements: new Map(), operation: new Map(), tier: new Map(), limit: new Map(), quota: new Map(),
    globalCap: new Map(), tenant: new Map(), override: new Map(),
  };
}

function desiredState(file: PolicyFile): State {
  const s = emptyState();
  s.settings.set("defaults", rec({ failureMode: file.defaults.failureMode }));
  if (file.requirements) s.requirements.set("block", rec(file.requirements));
  file.operations.forEach((o, position) =>
    s.operation.set(o.name, rec({ name: o.name, match: o.match, cost: o.cost, failureMode: o.failureMode, position })),
  );
  file.tiers.forEach((t, position) => {
    s.tier.set(t.name, rec({ name: t.name, weight: t.weight, position }));
    t.limits.forEach((l, i) =>
      s.limit.set(`${t.name}/${l.operation}/${l.scope}/${l.algorithm}`, rec({
        tier: t.name, operation: l.operation, scope: l.scope, algorithm: l.algorithm, limit: l.limit,
        window: normDur(l.window), burst: l.burst, precision: l.precision, mode: l.mode,
        maxDelay: normDur(l.maxDelay), leaseTtl: normDur(l.leaseTtl), position: i,
      })),
    );
    t.quotas.forEach((q, i) =>
      s.quota.set(`${t.name}/${q.operation}/${q.period}`, rec({
        tier: t.name, operation: q.operation, period: q.period, limit: q.limit, overage: q.overage, position: i,
      })),
    );
  });
  file.globalCaps.forEach((g, i) =>
    s.globalCap.set(`${g.operation}/${normDur(g.window)}`, rec({
      operation: g.operation, limit: g.limit, window: normDur(g.window), share: g.share, position: i,
    })),
  );
  for (const t of file.tenants) {
    s.tenant.set(t.slug, rec({ slug: t.slug, name: t.name, tier: t.tier, status: t.status }));
    const seen = new Map<string, number>();
    t.overrides.forEach((o, i) =>
      s.override.set(overrideKey(t.slug, o, seen), rec({
        tenant: t.slug, operation: o.operation, scope: o.scope, period: o.period, limit: o.limit,
        algorithm: o.algorithm, window: normDur(o.window), burst: o.burst, overage: o.overage,
        expiresAt: normInstant(o.expiresAt), position: i,
      })),
    );
  }
  return s;
}

interface RowIds {
  operation: Map<string, string>;
  tier: Map<string, string>;
  limit: Map<string, string>;
  quota: Map<string, string>;
  globalCap: Map<string, string>;
  tenant: Map<string, string>;
  override: Map<string, string>;
}

function currentState(rows: PolicyRows): { state: State; ids: RowIds } {
  const s = emptyState();
  const ids: RowIds = {
    operation: new Map(), tier: new Map(), limit: new Map(), quota: new Map(), globalCap: new Map(),
    tenant: new Map(), override: new Map(),
  };
  if (rows.settings) s.settings.set("defaults", rec({ failureMode: rows.settings.defaultFailureMode }));
  const requirements = requirementsRowToSpec(rows.settings);
  if (requirements) s.requirements.set("block", rec(requirements));
  for (const o of rows.operations) {
    s.operation.set(o.name, rec({ name: o.name, match: o.match, cost: o.cost, failureMode: o.failureMode, position: o.position }));
    ids.operation.set(o.name, o.id);
  }
  for (const t of rows.tiers) {
    s.tier.set(t.name, rec({ name: t.name, weight: t.weight, position: t.position }));
    ids.tier.set(t.name, t.id);
    for (const l of t.limits) {
      const key = `${t.name}/${l.operation}/${l.scope}/${l.algorithm}`;
      s.limit.set(key, rec({ tier: t.name, ...limitRowToSpec(l), position: l.position }));
      ids.limit.set(key, l.id);
    }
    for (const q of t.quotas) {
      const key = `${t.name}/${q.operation}/${q.period}`;
      s.quota.set(key, rec({ tier: t.name, ...quotaRowToSpec(q), position: q.position }));
      ids.quota.set(key, q.id);
    }
  }
  for (const g of rows.globalCaps) {
    const key = `${g.operation}/${formatDurationMs(g.windowMs)}`;
    s.globalCap.set(key, rec({ operation: g.operation, limit: g.limit, window: formatDurationMs(g.windowMs), share: g.share, position: g.position }));
    ids.globalCap.set(key, g.id);
  }
  for (const t of rows.tenants) {
    s.tenant.set(t.slug, rec({ slug: t.slug, name: t.name, tier: t.tier.name, status: t.status }));
    ids.tenant.set(t.slug, t.id);
    const seen = new Map<string, number>();
    for (const o of t.overrides) {
      const key = overrideKey(t.slug, o, seen);
      s.override.set(key, rec({ tenant: t.slug, ...overrideRowToSpec(o), position: o.position }));
      ids.override.set(key, o.id);
    }
  }
  return { state: s, ids };
}

const ENTITY_ORDER: (keyof State)[] = ["settings", "requirements", "operation", "tier", "limit", "quota", "globalCap", "tenant", "override"];

function diff(current: State, desired: State, plan: PolicyPlan): void {
  for (const entity of ENTITY_ORDER) {
    const before = current[entity];
    const after = desired[entity];
    for (const [key, want] of after) {
      const have = before.get(key);
      if (!have) plan.created.push({ entity, key, before: null, after: want });
      else if (canonicalJson(have) !== canonicalJson(want)) plan.changed.push({ entity, key, before: have, after: want });
    }
    for (const [key, have] of before) {
      if (!after.has(key)) plan.deleted.push({ entity, key, before: have, after: null });
    }
  }
}

interface KeyPlan {
  creates: { tenant: string; name: string; hash: string | null; prefix: string | null }[];
  rotates: { id: string; tenant: string; name: string; hash: string; prefix: string }[];
}

function planKeys(file: PolicyFile, rows: PolicyRows, plan: PolicyPlan, issues: PolicyIssue[]): KeyPlan {
  const result: KeyPlan = { creates: [], rotates: [] };
  const byHash = new Map<string, { tenant: string; name: string }>();
  const byName = new Map<string, PolicyRows["tenants"][number]["apiKeys"][number]>();
  for (const t of rows.tenants) {
    for (const k of t.apiKeys) {
      byHash.set(k.hash, { tenant: t.slug, name: k.name });
      byName.set(`${t.slug}/${k.name}`, k);
    }
  }
  const deletedTenants = new Set(rows.tenants.map((t) => t.slug).filter((slug) => !file.tenants.some((t) => t.slug === slug)));
  for (const t of rows.tenants) {
    if (!deletedTenants.has(t.slug)) continue;
    for (const k of t.apiKeys) {
      plan.deleted.push({ entity: "key", key: `${t.slug}/${k.name}`, before: rec({ name: k.name, prefix: k.prefix, revoked: k.revokedAt !== null || undefined }), after: null });
    }
  }
  const claimed = new Map<string, string>();
  file.tenants.forEach((t, ti) => {
    t.keys.forEach((k, ki) => {
      const id = `${t.slug}/${k.name}`;
      const path = ["tenants", ti, "keys", ki, "key"];
      const hash = k.key === undefined ? null : hashSecret(k.key);
      const prefix = k.key === undefined ? null : displayPrefix(k.key);
      if (hash !== null) {
        const owner = byHash.get(hash);
        const twin = claimed.get(hash);
        if ((owner && `${owner.tenant}/${owner.name}` !== id) || (twin && twin !== id)) {
          issues.push({ path: formatPath(path), message: "this key is already in use by another key; keys must be unique" });
          return;
        }
        claimed.set(hash, id);
      }
      const existing = byName.get(id);
      if (!existing) {
        result.creates.push({ tenant: t.slug, name: k.name, hash, prefix });
        plan.created.push({ entity: "key", key: id, before: null, after: rec({ name: k.name, prefix: prefix ?? "(generated on apply)" }) });
        return;
      }
      if (hash === null || existing.hash === hash) {
        if (existing.revokedAt) plan.warnings.push(`key ${id} is revoked; apply leaves it revoked (list a new plaintext to rotate it)`);
        return;
      }
      result.rotates.push({ id: existing.id, tenant: t.slug, name: k.name, hash, prefix: prefix! });
      plan.changed.push({
        entity: "key",
        key: id,
        before: rec({ name: existing.name, prefix: existing.prefix, revoked: existing.revokedAt !== null || undefined }),
        after: rec({ name: k.name, prefix }),
      });
    });
  });
  return result;
}

function emptyPlan(): PolicyPlan {
  return { created: [], changed: [], deleted: [], warnings: [] };
}

export function planIsEmpty(plan: PolicyPlan): boolean {
  return plan.created.length + plan.changed.length + plan.deleted.length === 0;
}

function computePlan(file: PolicyFile, rows: PolicyRows) {
  const plan = emptyPlan();
  const { state, ids } = currentState(rows);
  diff(state, desiredState(file), plan);
  const issues: PolicyIssue[] = [];
  const keyPlan = planKeys(file, rows, plan, issues);
  if (issues.length > 0) throw invalidPolicy(issues);
  return { plan, ids, keyPlan };
}

function validated(input: PolicyInput): PolicyFile {
  const parsed = parsePolicyInput(input);
  if (!parsed.ok) throw invalidPolicy(parsed.issues);
  return parsed.value;
}

/** What applying `input` would change, without changing anything. Throws ServiceError(invalid_policy). */
export async function planPolicyFile(db: PrismaClient | Tx, input: PolicyInput): Promise<PolicyPlan> {
  const file = validated(input);
  return computePlan(file, await loadPolicyRows(db)).plan;
}

// ---------------------------------------------------------------------------------------------
// Writing

const ms = (d: AuditJson | undefined): number | null => (typeof d === "string" ? parseDurationMs(d) : null);
const str = (v: AuditJson | undefined): string | null => (typeof v === "string" ? v : null);
const int = (v: AuditJson | undefined): number | null => (typeof v === "number" ? v : null);

async function write(tx: Tx, plan: PolicyPlan, ids: RowIds, keyPlan: KeyPlan, actor: string) {
  const audit: AuditInput[] = [];
  const rowId = new Map<string, string>();
  const idOf = (entity: keyof RowIds, key: string) => rowId.get(`${entity}:${key}`) ?? ids[entity].get(key);
  const changes = (entity: PlanEntity) => ({
    created: plan.created.filter((c) => c.entity === entity),
    changed: plan.changed.filter((c) => c.entity === entity),
    deleted: plan.deleted.filter((c) => c.entity === entity),
  });
  const log = (verb: string, c: PlanChange, entityId: string | null) =>
    audit.push({ actor, action: `${c.entity}.${verb}`, entity: c.entity, entityId: entityId ?? c.key, before: c.before, after: c.after });

  // settings
  for (const c of [...changes("settings").created, ...changes("settings").changed]) {
    const failureMode = str(c.after!.failureMode) ?? "open";
    await tx.policySettings.upsert({ where: { id: 1 }, create: { id: 1, defaultFailureMode: failureMode }, update: { defaultFailureMode: failureMode } });
    log(c.before ? "update" : "create", c, "1");
  }
  // the requirements block, stored as the file states it (validated above)
  const req = changes("requirements");
  for (const c of [...req.created, ...req.changed, ...req.deleted]) {
    const requirements = c.after ? (c.after as Prisma.InputJsonObject) : Prisma.DbNull;
    await tx.policySettings.upsert({ where: { id: 1 }, create: { id: 1, requirements }, update: { requirements } });
    log(c.after ? (c.before ? "update" : "create") : "delete", c, "1");
  }

  // operations
  const ops = changes("operation");
  for (const c of ops.deleted) {
    await tx.operation.delete({ where: { id: ids.operation.get(c.key)! } });
    log("delete", c, ids.operation.get(c.key)!);
  }
  for (const c of [...ops.created, ...ops.changed]) {
    const a = c.after!;
    const data = { name: c.key, match: a.match as string[], cost: int(a.cost) ?? 1, failureMode: str(a.failureMode), position: int(a.position) ?? 0 };
    const existing = ids.operation.get(c.key);
    const id = existing ?? newId("operation");
    if (existing) await tx.operation.update({ where: { id }, data });
    else await tx.operation.create({ data: { id, ...data } });
    log(existing ? "update" : "create", c, id);
  }

  // tiers (deleted at the end, after tenants left them)
  const tiers = changes("tier");
  for (const c of [...tiers.created, ...tiers.changed]) {
    const a = c.after!;
    const data = { name: c.key, weight: int(a.weight) ?? 1, position: int(a.position) ?? 0 };
    const existing = ids.tier.get(c.key);
    const id = existing ?? newId("tier");
    if (existing) await tx.tier.update({ where: { id }, data });
    else await tx.tier.create({ data: { id, ...data } });
    rowId.set(`tier:${c.key}`, id);
    log(existing ? "update" : "create", c, id);
  }

  // limits
  const limits = changes("limit");
  for (const c of limits.deleted) {
    await tx.limit.delete({ where: { id: ids.limit.get(c.key)! } });
    log("delete", c, ids.limit.get(c.key)!);
  }
  for (const c of [...limits.created, ...limits.changed]) {
    const a = c.after!;
    const data = {
      limit: int(a.limit)!, windowMs: ms(a.window), burst: int(a.burst), precision: int(a.precision),
      mode: str(a.mode) ?? "reject", maxDelayMs: ms(a.maxDelay), leaseTtlMs: ms(a.leaseTtl), position: int(a.position) ?? 0,
    };
    const existing = ids.limit.get(c.key);
    const id = existing ?? newId("limit");
    if (existing) await tx.limit.update({ where: { id }, data });
    else {
      await tx.limit.create({
        data: { id, tierId: idOf("tier", str(a.tier)!)!, operation: str(a.operation)!, scope: str(a.scope)!, algorithm: str(a.algorithm)!, ...data },
      });
    }
    log(existing ? "update" : "create", c, id);
  }

  // quotas
  const quotas = changes("quota");
  for (const c of quotas.deleted) {
    await tx.quota.delete({ where: { id: ids.quota.get(c.key)! } });
    log("delete", c, ids.quota.get(c.key)!);
  }
  for (const c of [...quotas.created, ...quotas.changed]) {
    const a = c.after!;
    const data = { limit: BigInt(int(a.limit)!), overage: str(a.overage) ?? "block", position: int(a.position) ?? 0 };
    const existing = ids.quota.get(c.key);
    const id = existing ?? newId("quota");
    if (existing) await tx.quota.update({ where: { id }, data });
    else await tx.quota.create({ data: { id, tierId: idOf("tier", str(a.tier)!)!, operation: str(a.operation)!, period: str(a.period)!, ...data } });
    log(existing ? "update" : "create", c, id);
  }

  // global caps
  const caps = changes("globalCap");
  for (const c of caps.deleted) {
    await tx.globalCap.delete({ where: { id: ids.globalCap.get(c.key)! } });
    log("delete", c, ids.globalCap.get(c.key)!);
  }
  for (const c of [...caps.created, ...caps.changed]) {
    const a = c.after!;
    const data = { limit: int(a.limit)!, share: str(a.share) ?? "none", position: int(a.position) ?? 0 };
    const existing = ids.globalCap.get(c.key);
    const id = existing ?? newId("globalCap");
    if (existing) await tx.globalCap.update({ where: { id }, data });
    else await tx.globalCap.create({ data: { id, operation: str(a.operation)!, windowMs: ms(a.window)!, ...data } });
    log(existing ? "update" : "create", c, id);
  }

  // tenants
  const tenants = changes("tenant");
  for (const c of [...tenants.created, ...tenants.changed]) {
    const a = c.after!;
    const data = { name: str(a.name)!, tierId: idOf("tier", str(a.tier)!)!, status: (str(a.status) ?? "active") as "active" | "suspended" };
    const existing = ids.tenant.get(c.key);
    const id = existing ?? newId("tenant");
    if (existing) await tx.tenant.update({ where: { id }, data });
    else await tx.tenant.create({ data: { id, slug: c.key, ...data } });
    rowId.set(`tenant:${c.key}`, id);
    log(existing ? "update" : "create", c, id);
  }

  // overrides
  const overrides = changes("override");
  for (const c of overrides.deleted) {
    const id = ids.override.get(c.key)!;
    await tx.tenantOverride.deleteMany({ where: { id, tenantId: idOf("tenant", str(c.before!.tenant)!)! } });
    log("delete", c, id);
  }
  for (const c of [...overrides.created, ...overrides.changed]) {
    const a = c.after!;
    const tenantId = idOf("tenant", str(a.tenant)!)!;
    const data = {
      operation: str(a.operation)!, scope: str(a.scope), period: str(a.period), limit: BigInt(int(a.limit)!),
      algorithm: str(a.algorithm), windowMs: ms(a.window), burst: int(a.burst), overage: str(a.overage),
      expiresAt: str(a.expiresAt) === null ? null : new Date(str(a.expiresAt)!), position: int(a.position) ?? 0,
    };
    const existing = ids.override.get(c.key);
    const id = existing ?? newId("override");
    if (existing) await tx.tenantOverride.updateMany({ where: { id, tenantId }, data });
    else await tx.tenantOverride.create({ data: { id, tenantId, ...data } });
    log(existing ? "update" : "create", c, id);
  }

  // keys
  const generatedKeys: ApplyResult["generatedKeys"] = [];
  for (const k of keyPlan.creates) {
    const tenantId = idOf("tenant", k.tenant)!;
    let hash = k.hash;
    let prefix = k.prefix;
    if (hash === null) {
      const key = generateSecret("sk_live");
      hash = hashSecret(key);
      prefix = displayPrefix(key);
      generatedKeys.push({ tenant: k.tenant, name: k.name, key });
    }
    const id = newId("apiKey");
    await tx.apiKey.create({ data: { id, tenantId, name: k.name, hash, prefix: prefix! } });
    audit.push({ actor, action: "key.create", entity: "key", entityId: id, after: { tenant: k.tenant, name: k.name, prefix: prefix! } });
  }
  for (const k of keyPlan.rotates) {
    const tenantId = idOf("tenant", k.tenant)!;
    await tx.apiKey.updateMany({ where: { id: k.id, tenantId }, data: { hash: k.hash, prefix: k.prefix, revokedAt: null } });
    const change = plan.changed.find((c) => c.entity === "key" && c.key === `${k.tenant}/${k.name}`)!;
    log("update", change, k.id);
  }

  // deletions that must wait: tenants (cascading their overrides and keys), then tiers
  for (const c of tenants.deleted) {
    const id = ids.tenant.get(c.key)!;
    await tx.tenant.delete({ where: { id } });
    log("delete", c, id);
  }
  for (const c of plan.deleted.filter((d) => d.entity === "key")) log("delete", c, null);
  for (const c of tiers.deleted) {
    const id = ids.tier.get(c.key)!;
    await tx.tier.delete({ where: { id } });
    log("delete", c, id);
  }

  await writeAuditMany(tx, audit);
  return generatedKeys;
}

/**
 * Applies a policy file (YAML/JSON text or an object). Throws ServiceError(invalid_policy) with
 * every issue's path; writes nothing then. With `dryRun`, only plans.
 */
export async function applyPolicyFile(
  db: PrismaClient,
  input: PolicyInput,
  options: { actor: string; dryRun?: boolean },
): Promise<ApplyResult> {
  const file = validated(input);
  const dryRun = options.dryRun ?? false;
  if (dryRun) {
    const { plan } = computePlan(file, await loadPolicyRows(db));
    return { plan, dryRun, applied: false, generatedKeys: [] };
  }
  return db.$transaction(
    async (tx) => {
      await lockPolicy(tx);
      const { plan, ids, keyPlan } = computePlan(file, await loadPolicyRows(tx));
      if (planIsEmpty(plan)) return { plan, dryRun, applied: false, generatedKeys: [] };
      const generatedKeys = await write(tx, plan, ids, keyPlan, options.actor);
      return { plan, dryRun, applied: true, generatedKeys };
    },
    { maxWait: 10_000, timeout: 120_000 },
  );
}

/**
 * Applies an edit of the current draft: `mutate` receives the draft as a policy file (no key
 * plaintexts) and returns the changed file, or null to change nothing. Reading the draft and
 * applying the result happen in one transaction under the policy lock, so two editors saving at
 * the same moment cannot undo each other's changes (each edit applies to the other's result).
 * Keys are not part of the edit and stay as they are.
 */
export async function applyPolicyEdit(
  db: PrismaClient,
  mutate: (draft: PolicySpec) => PolicySpec | null,
  options: { actor: string },
): Promise<ApplyResult> {
  return db.$transaction(
    async (tx) => {
      await lockPolicy(tx);
      const rows = await loadPolicyRows(tx);
      const next = mutate(structuredClone(rowsToSpec(rows)));
      const empty: PolicyPlan = { created: [], changed: [], deleted: [], warnings: [] };
      if (next === null) return { plan: empty, dryRun: false, applied: false, generatedKeys: [] };
      const file = validated(next as unknown as Record<string, unknown>);
      const { plan, ids, keyPlan } = computePlan(file, rows);
      if (planIsEmpty(plan)) return { plan, dryRun: false, applied: false, generatedKeys: [] };
      const generatedKeys = await write(tx, plan, ids, keyPlan, options.actor);
      return { plan, dryRun: false, applied: true, generatedKeys };
    },
    { maxWait: 10_000, timeout: 120_000 },
  );
}

/** One line per change: `+ limit free/export/tenant/token_bucket`, `~ tenant acme: tier free → pro`. */
export function formatPlan(plan: PolicyPlan): string {
  const lines: string[] = [];
  const fields = (c: PlanChange) => {
    const keys = new Set([...Object.keys(c.before ?? {}), ...Object.keys(c.after ?? {})]);
    const parts: string[] = [];
    for (const k of keys) {
      const b = c.before?.[k];
      const a = c.after?.[k];
      if (canonicalJson(b ?? null) !== canonicalJson(a ?? null)) parts.push(`${k}: ${JSON.stringify(b ?? null)} → ${JSON.stringify(a ?? null)}`);
    }
    return parts.join(", ");
  };
  for (const c of plan.created) lines.push(`+ ${c.entity} ${c.key}`);
  for (const c of plan.changed) lines.push(`~ ${c.entity} ${c.key}: ${fields(c)}`);
  for (const c of plan.deleted) lines.push(`- ${c.entity} ${c.key}`);
  for (const w of plan.warnings) lines.push(`! ${w}`);
  const summary = `${plan.created.length} to create, ${plan.changed.length} to change, ${plan.deleted.length} to delete`;
  return lines.length ? `${lines.join("\n")}\n${summary}` : `No changes. ${summary}`;
}
