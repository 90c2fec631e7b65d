/**
 * Writes a policy plan (lib/policy/plan.ts) to the draft's rows, with one audit entry per change in
 * the same transaction. Table-driven: each entity has one entry of TABLES (how its record becomes
 * columns, which parent row it hangs from); creations and updates go parents first, in the order of
 * the plan's sections, and deletions children first (a tier goes after its tenants have left it).
 * Tenant-owned rows are written with their tenant in the `where`.
 */
import { Prisma } from "../generated/prisma/client";
import { parseDurationMs } from "../policy/duration";
import { joinFailureModes } from "../policy/envoy/failure-modes";
import {
  naturalKeys,
  SECTIONS,
  type Draft,
  type KeyState,
  type PlanChange,
  type PlanEntity,
  type PlanRecords,
  type PolicyPlan,
} from "../policy/plan";
import { toAuditJson, writeAuditMany, type AuditInput } from "./audit";
import type { Tx } from "./client";
import { newId, overrideRowToSpec, rowsToSpec, type ID_PREFIXES, type PolicyRows } from "./policy-repo";

/** The id of every row of the draft, by entity and natural key. */
export type RowIds = { [E in PlanEntity]: Map<string, string> };

function emptyIds(): RowIds {
  return {
    settings: new Map(), requirements: new Map(), approval: new Map(), operation: new Map(), tier: new Map(), limit: new Map(), quota: new Map(),
    globalCap: new Map(), tenant: new Map(), override: new Map(), key: new Map(), envoySettings: new Map(), envoyDomain: new Map(),
  };
}

/** The rows as a draft (policy and keys), and the id of each row under its natural key. */
export function draftFromRows(rows: PolicyRows): { draft: Draft; ids: RowIds } {
  const ids = emptyIds();
  if (rows.settings) ids.settings.set("defaults", String(rows.settings.id));
  if (rows.settings?.requirements) ids.requirements.set("block", String(rows.settings.id));
  if (rows.settings?.approval) ids.approval.set("block", String(rows.settings.id));
  if (rows.settings?.rateLimitService) ids.envoySettings.set("settings", String(rows.settings.id));
  for (const d of rows.envoyDomains) ids.envoyDomain.set(d.domain, d.id);
  for (const o of rows.operations) ids.operation.set(o.name, o.id);
  for (const t of rows.tiers) {
    ids.tier.set(t.name, t.id);
    for (const l of t.limits) ids.limit.set(naturalKeys.limit(t.name, l), l.id);
    for (const q of t.quotas) ids.quota.set(naturalKeys.quota(t.name, q), q.id);
  }
  const spec = rowsToSpec(rows);
  rows.globalCaps.forEach((g, i) => ids.globalCap.set(naturalKeys.globalCap(spec.globalCaps[i]), g.id));
  const keys: KeyState[] = [];
  for (const t of rows.tenants) {
    ids.tenant.set(t.slug, t.id);
    const overrideKeys = naturalKeys.overrides(t.slug, t.overrides.map(overrideRowToSpec));
    t.overrides.forEach((o, i) => ids.override.set(overrideKeys[i], o.id));
    for (const k of t.apiKeys) {
      ids.key.set(naturalKeys.key(t.slug, k.name), k.id);
      keys.push({ tenant: t.slug, name: k.name, hash: k.hash, prefix: k.prefix, revoked: k.revokedAt !== null });
    }
  }
  return { draft: { spec, keys, settingsStored: rows.settings !== null }, ids };
}

export interface WriteContext {
  actor: string;
  /** When a revocation happens (revokedAt). */
  nowMs: number;
  /** The rows' ids before the write (draftFromRows); rows the write creates are added to it. */
  ids: RowIds;
  /** Hash and prefix of every key the plan creates or rotates, by natural key. */
  keySecrets: ReadonlyMap<string, { hash: string; prefix: string }>;
}

interface Writer {
  tx: Tx;
  ctx: WriteContext;
  /** The id of a parent row (existing, or created earlier in this write). */
  ref(entity: PlanEntity, key: string): string;
}

interface EntityTable<E extends PlanEntity> {
  /** The id prefix of new rows (ID_PREFIXES), or null for the settings singleton. */
  idKind: keyof typeof ID_PREFIXES | null;
  create(w: Writer, id: string, r: PlanRecords[E], key: string): Promise<unknown>;
  update(w: Writer, id: string, r: PlanRecords[E], key: string, before: PlanRecords[E]): Promise<unknown>;
  remove(w: Writer, id: string, before: PlanRecords[E]): Promise<unknown>;
  /** The verb of an update's audit action (default `update`). */
  updateVerb?(before: PlanRecords[E], after: PlanRecords[E]): string;
  /** What the audit entry shows after the change (default: the plan's record). */
  audited?(w: Writer, r: PlanRecords[E], key: string): PlanRecords[E];
}

const ms = (d: string | undefined): number | null => (d === undefined ? null : parseDurationMs(d));
const nul = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

function secretOf(w: Writer, key: string): { hash: string; prefix: string } {
  const secret = w.ctx.keySecrets.get(key);
  if (!secret) throw new Error(`policy writer: no hash for key ${key}`);
  return secret;
}

const limitColumns = (r: PlanRecords["limit"]) => ({
  limit: r.limit, windowMs: ms(r.window), burst: nul(r.burst), precision: nul(r.precision), mode: r.mode,
  maxDelayMs: ms(r.maxDelay), leaseTtlMs: ms(r.leaseTtl), regions: r.regions ?? "local", position: r.position,
});
const overrideColumns = (r: PlanRecords["override"]) => ({
  operation: r.operation, scope: nul(r.scope), period: nul(r.period), limit: BigInt(r.limit), algorithm: nul(r.algorithm),
  windowMs: ms(r.window), burst: nul(r.burst), overage: nul(r.overage), expiresAt: r.expiresAt === undefined ? null : new Date(r.expiresAt),
  position: r.position,
});
const json = (v: number[] | undefined) => (v === undefined ? Prisma.DbNull : v);
const tenantColumns = (w: Writer, r: PlanRecords["tenant"]) => ({
  name: r.name, tierId: w.ref("tier", r.tier), status: r.status,
  billingAnchor: r.billing?.anchor ?? null, billingTimeZone: r.billing?.timeZone ?? null, thresholds: json(r.thresholds),
});
const settingsColumns = (r: PlanRecords["settings"]) => ({ defaultFailureMode: r.failureMode, planChange: r.planChange ?? null });
const envoySettingsJson = (r: PlanRecords["envoySettings"]) => ({ unknownDomain: r.unknownDomain, shadowMode: r.shadowMode });
const envoyDocumentJson = (r: PlanRecords["envoyDomain"]) => joinFailureModes(r.document, r.failureModes) as unknown as Prisma.InputJsonObject;

const TABLES: { [E in PlanEntity]: EntityTable<E> } = {
  settings: {
    idKind: null,
    create: (w, _id, r) => w.tx.policySettings.upsert({ where: { id: 1 }, create: { id: 1, ...settingsColumns(r) }, update: settingsColumns(r) }),
    update: (w, _id, r) => w.tx.policySettings.update({ where: { id: 1 }, data: settingsColumns(r) }),
    remove: (w) => w.tx.policySettings.deleteMany({ where: { id: 1 } }),
  },
  requirements: {
    // Stored as the file states it (validated with the file), in the settings row.
    idKind: null,
    create: (w, _id, r) => w.tx.policySettings.upsert({ where: { id: 1 }, create: { id: 1, requirements: r as Prisma.InputJsonObject }, update: { requirements: r as Prisma.InputJsonObject } }),
    update: (w, _id, r) => w.tx.policySettings.update({ where: { id: 1 }, data: { requirements: r as Prisma.InputJsonObject } }),
    remove: (w) => w.tx.policySettings.updateMany({ where: { id: 1 }, data: { requirements: Prisma.DbNull } }),
  },
  approval: {
    // In the settings row, like requirements.
    idKind: null,
    create: (w, _id, r) => w.tx.policySettings.upsert({ where: { id: 1 }, create: { id: 1, approval: { ...r } }, update: { approval: { ...r } } }),
    update: (w, _id, r) => w.tx.policySettings.update({ where: { id: 1 }, data: { approval: { ...r } } }),
    remove: (w) => w.tx.policySettings.updateMany({ where: { id: 1 }, data: { approval: Prisma.DbNull } }),
  },
  operation: {
    idKind: "operation",
    create: (w, id, r) => w.tx.operation.create({ data: { id, name: r.name, match: r.match, cost: r.cost, failureMode: nul(r.failureMode), position: r.position } }),
    update: (w, id, r) => w.tx.operation.update({ where: { id }, data: { match: r.match, cost: r.cost, failureMode: nul(r.failureMode), position: r.position } }),
    remove: (w, id) => w.tx.operation.delete({ where: { id } }),
  },
  tier: {
    idKind: "tier",
    create: (w, id, r) => w.tx.tier.create({ data: { id, name: r.name, weight: r.weight, thresholds: json(r.thresholds), position: r.position } }),
    update: (w, id, r) => w.tx.tier.update({ where: { id }, data: { weight: r.weight, thresholds: json(r.thresholds), position: r.position } }),
    remove: (w, id) => w.tx.tier.delete({ where: { id } }),
  },
  limit: {
    idKind: "limit",
    create: (w, id, r) =>
      w.tx.limit.create({ data: { id, tierId: w.ref("tier", r.tier), operation: r.operation, scope: r.scope, algorithm: r.algorithm, ...limitColumns(r) } }),
    update: (w, id, r) => w.tx.limit.update({ where: { id }, data: limitColumns(r) }),
    remove: (w, id) => w.tx.limit.delete({ where: { id } }),
  },
  quota: {
    idKind: "quota",
    create: (w, id, r) =>
      w.tx.quota.create({ data: { id, tierId: w.ref("tier", r.tier), operation: r.operation, period: r.period, limit: BigInt(r.limit), overage: r.overage, position: r.position } }),
    update: (w, id, r) => w.tx.quota.update({ where: { id }, data: { limit: BigInt(r.limit), overage: r.overage, position: r.position } }),
    remove: (w, id) => w.tx.quota.delete({ where: { id } }),
  },
  globalCap: {
    idKind: "globalCap",
    create: (w, id, r) =>
      w.tx.globalCap.create({ data: { id, operation: r.operation, windowMs: ms(r.window)!, limit: r.limit, share: r.share, regions: r.regions ?? "local", position: r.position } }),
    update: (w, id, r) => w.tx.globalCap.update({ where: { id }, data: { limit: r.limit, share: r.share, regions: r.regions ?? "local", position: r.position } }),
    remove: (w, id) => w.tx.globalCap.delete({ where: { id } }),
  },
  tenant: {
    idKind: "tenant",
    create: (w, id, r) => w.tx.tenant.create({ data: { id, slug: r.slug, ...tenantColumns(w, r) } }),
    update: (w, id, r) => w.tx.tenant.update({ where: { id }, data: tenantColumns(w, r) }),
    remove: (w, id) => w.tx.tenant.delete({ where: { id } }),
  },
  override: {
    idKind: "override",
    create: (w, id, r) => w.tx.tenantOverride.create({ data: { id, tenantId: w.ref("tenant", r.tenant), ...overrideColumns(r) } }),
    update: (w, id, r) => w.tx.tenantOverride.updateMany({ where: { id, tenantId: w.ref("tenant", r.tenant) }, data: overrideColumns(r) }),
    remove: (w, id, before) => w.tx.tenantOverride.deleteMany({ where: { id, tenantId: w.ref("tenant", before.tenant) } }),
  },
  key: {
    idKind: "apiKey",
    create: (w, id, r, key) => w.tx.apiKey.create({ data: { id, tenantId: w.ref("tenant", r.tenant), name: r.name, ...secretOf(w, key) } }),
    update: (w, id, r, key, before) => {
      const data: Prisma.ApiKeyUpdateManyMutationInput = { ...w.ctx.keySecrets.get(key) };
      if (r.revoked !== before.revoked) data.revokedAt = r.revoked ? new Date(w.ctx.nowMs) : null;
      return w.tx.apiKey.updateMany({ where: { id, tenantId: w.ref("tenant", r.tenant) }, data });
    },
    remove: (w, id, before) => w.tx.apiKey.deleteMany({ where: { id, tenantId: w.ref("tenant", before.tenant) } }),
    updateVerb: (before, after) => (after.revoked && !before.revoked ? "revoke" : "update"),
    audited: (w, r, key) => ({ ...r, prefix: w.ctx.keySecrets.get(key)?.prefix ?? r.prefix }),
  },
  envoySettings: {
    // In the settings row, like requirements; a row exists only when they differ from the defaults.
    idKind: null,
    create: (w, _id, r) => w.tx.policySettings.upsert({ where: { id: 1 }, create: { id: 1, rateLimitService: envoySettingsJson(r) }, update: { rateLimitService: envoySettingsJson(r) } }),
    update: (w, _id, r) => w.tx.policySettings.update({ where: { id: 1 }, data: { rateLimitService: envoySettingsJson(r) } }),
    remove: (w) => w.tx.policySettings.updateMany({ where: { id: 1 }, data: { rateLimitService: Prisma.DbNull } }),
  },
  envoyDomain: {
    idKind: "envoyDomain",
    create: (w, id, r) => w.tx.envoyDomain.create({ data: { id, domain: r.domain, document: envoyDocumentJson(r), position: r.position } }),
    update: (w, id, r) => w.tx.envoyDomain.update({ where: { id }, data: { document: envoyDocumentJson(r), position: r.position } }),
    remove: (w, id) => w.tx.envoyDomain.delete({ where: { id } }),
  },
};

/** Writes every change of `plan` and its audit entries; returns the ids, new rows included. */
export async function writePlan(tx: Tx, plan: PolicyPlan, ctx: WriteContext): Promise<RowIds> {
  const ids = ctx.ids;
  const w: Writer = {
    tx,
    ctx,
    ref(entity, key) {
      const id = ids[entity].get(key);
      if (id === undefined) throw new Error(`policy writer: no ${entity} ${key}`);
      return id;
    },
  };
  const audit: AuditInput[] = [];
  const log = (verb: string, c: PlanChange, id: string, after: unknown) =>
    audit.push({ actor: ctx.actor, action: `${c.entity}.${verb}`, entity: c.entity, entityId: id, before: toAuditJson(c.before), after: toAuditJson(after) });
  const of = (list: PlanChange[], entity: PlanEntity) => list.filter((c) => c.entity === entity);

  for (const { entity } of SECTIONS) {
    const table = TABLES[entity] as unknown as EntityTable<PlanEntity>;
    for (const c of of(plan.created, entity)) {
      const id = table.idKind === null ? "1" : newId(table.idKind);
      await table.create(w, id, c.after!, c.key);
      ids[entity].set(c.key, id);
      log("create", c, id, table.audited ? table.audited(w, c.after!, c.key) : c.after);
    }
    for (const c of of(plan.changed, entity)) {
      const id = w.ref(entity, c.key);
      await table.update(w, id, c.after!, c.key, c.before!);
      log(table.updateVerb?.(c.before!, c.after!) ?? "update", c, id, table.audited ? table.audited(w, c.after!, c.key) : c.after);
    }
  }
  for (const { entity } of [...SECTIONS].reverse()) {
    const table = TABLES[entity] as unknown as EntityTable<PlanEntity>;
    for (const c of of(plan.deleted, entity)) {
      const id = w.ref(entity, c.key);
      await table.remove(w, id, c.before!);
      ids[entity].delete(c.key);
      log("delete", c, id, null);
    }
  }
  await writeAuditMany(tx, audit);
  return ids;
}
