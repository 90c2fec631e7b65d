/**
 * `sluice publish`, `POST /api/v1/policy/publish` and the UI's publish button: compile the draft
 * in Postgres, validate it, and make it live.
 *
 * Order of events, all inside one Postgres transaction holding the policy lock: load the rows,
 * compile (an invalid policy throws here: nothing is written and the live version stays), insert
 * PolicyVersion N and its audit entry, then write Redis in one MULTI (policy:vN, current → N, key
 * index, service tokens, PUBLISH). If Redis fails, the transaction rolls back and version N does not
 * exist anywhere. With SLUICE_REGIONS the MULTI goes to every region's Redis: a publish that reaches
 * at least one commits, and records the regions it missed for the worker to catch up
 * (lib/services/policy/region-writes.ts, docs/regions.md); Postgres commits only after Redis has the document. (If the commit itself then
 * fails, Redis holds a vN that Postgres lacks; the next publish overwrites it with a new document
 * and the same N, and readers compare checksums as well as versions.)
 *
 * Single-node mode (SLUICE_MODE=single-node, no Redis): `redis` is null and the Redis step is
 * skipped; the committed PolicyVersion row is what the single-node decision server polls
 * (lib/single-node/postgres-policy-source.ts), and its keys and service tokens come from the
 * ApiKey and ApiToken tables directly.
 *
 * Under an `approval` rule in the live version (docs/control-plane.md#approval), a publish beyond
 * its blast radius is not made: the gate (lib/services/approval/approval-gate.ts) records a request
 * for a second person, and `approval_pending` says so. Approving it (lib/services/approval/
 * decide-approval.ts) runs publishDraft again with that request, for exactly the draft it showed.
 */
import { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client";
import type { Tx } from "../../db/client";
import { writeAudit } from "../../db/audit";
import {
  latestPolicyVersion,
  listKeyIndexEntries,
  listServiceTokenHashes,
  listTenantTokenHashes,
  loadPolicyRows,
  lockPolicy,
  rowsToSpec,
} from "../../db/policy-repo";
import { compilePolicy, finalizePolicy, PolicyCompileError, policyChecksum } from "../../policy/compile";
import type { CompiledPolicy, CompiledPolicyBody } from "../../policy/compiled";
import { parseCompiledPolicy } from "../../policy/compiled-schema";
import { orderByNames } from "../../policy/order";
import { stampChanges } from "../../policy/publish-stamps";
import { writePublishedPolicy, type RedisLike } from "../../redis/policy";
import { seedRegionShares } from "../../redis/region-shares";
import { configuredRegions } from "../../redis/regions";
import type { ApprovalRecord } from "../../db/approval-repo";
import type { Role } from "../../policy/types";
import { requireApproval } from "../approval/approval-gate";
import type { ApprovalView } from "../approval/approval-view";
import { invalidPolicy, ServiceError } from "../errors";
import { writeEveryRegion } from "./region-writes";
import { refuseDuringRollout } from "../rollout/refuse-during-rollout";

/** POST /api/v1/policy/publish's body (the route and its OpenAPI document use this one schema). */
export const publishRequestSchema = z.strictObject({ note: z.string().max(500).optional() });

export interface PublishDeps {
  db: PrismaClient;
  /** null in single-node mode: Postgres alone is the record, there is no Redis to write. */
  redis: RedisLike | null;
}

export interface PublishResult {
  /**
   * `published`: a new version is live; `unchanged`: the draft equals the live version (rewritten
   * to Redis as is); `approval_pending`: the live version's approval rule wants a second person,
   * nothing was published (`version` is the live one).
   */
  status: "published" | "unchanged" | "approval_pending";
  version: number;
  checksum: string;
  previousVersion: number | null;
  /**
   * With SLUICE_REGIONS: the regions whose Redis could not be reached. They keep their last good
   * version until the worker catches them up (docs/regions.md). Absent when every region took it.
   */
  regionsMissed?: string[];
  /** With `approval_pending`: the request waiting for a second person. */
  approval?: ApprovalView;
}

/** Who publishes: the audit actor, and their role (null: unknown, never an admin's bypass). */
export interface PublishOptions {
  actor: string;
  role?: Role | null;
  note?: string;
  nowMs?: number;
}

/** Compiles the draft in Postgres; throws ServiceError(invalid_policy) with paths. */
export async function compileDraft(db: PrismaClient | Tx): Promise<CompiledPolicyBody> {
  const rows = await loadPolicyRows(db);
  try {
    return compilePolicy(rowsToSpec(rows));
  } catch (error) {
    if (error instanceof PolicyCompileError) throw invalidPolicy(error.issues);
    throw error;
  }
}

/** The live version's body, or null (none yet, or a stored document that no longer validates). */
function liveBody(latest: { document: unknown } | null): CompiledPolicyBody | null {
  const parsed = latest ? parseCompiledPolicy(latest.document) : null;
  return parsed?.ok ? parsed.value : null;
}

/**
 * Stamps `body` as the next version and makes it live. Shared by publish and rollback; runs inside
 * the caller's transaction, which must hold the policy lock.
 */
export async function publishBody(
  tx: Tx,
  redis: RedisLike | null,
  body: CompiledPolicyBody,
  meta: { actor: string; note?: string | null; rolledBackFrom?: number | null; nowMs: number },
): Promise<{ doc: CompiledPolicy; previousVersion: number | null; regionsMissed?: string[] }> {
  const latest = await latestPolicyVersion(tx);
  const version = (latest?.version ?? 0) + 1;
  // A tenant whose billing or tier differs from the live version's changes at this publish.
  const doc = finalizePolicy(stampChanges(body, liveBody(latest), meta.nowMs), version, new Date(meta.nowMs));
  // The document must pass the same schema every reader applies; never publish what readers refuse.
  const check = parseCompiledPolicy(JSON.parse(JSON.stringify(doc)));
  if (!check.ok) throw invalidPolicy(check.issues);
  await tx.policyVersion.create({
    data: {
      version,
      document: JSON.parse(JSON.stringify(doc)),
      tierOrder: await publishedTierOrder(tx, Object.keys(doc.tiers), meta.rolledBackFrom ?? null),
      checksum: doc.checksum,
      author: meta.actor,
      note: meta.note ?? null,
      rolledBackFrom: meta.rolledBackFrom ?? null,
      createdAt: new Date(meta.nowMs),
    },
  });
  await writeAudit(tx, {
    actor: meta.actor,
    action: meta.rolledBackFrom ? "policy.rollback" : "policy.publish",
    entity: "policy",
    entityId: String(version),
    before: latest ? { version: latest.version, checksum: latest.checksum } : null,
    after: { version, checksum: doc.checksum, rolledBackFrom: meta.rolledBackFrom ?? null, note: meta.note ?? null },
  });
  const regionsMissed = redis ? await writePublished(tx, redis, doc, `publishing v${version}`, meta.nowMs) : [];
  return { doc, previousVersion: latest?.version ?? null, ...(regionsMissed.length > 0 ? { regionsMissed } : {}) };
}

/**
 * The order a version's tiers are shown in, kept beside its document (jsonb keeps no key order): a
 * rollback's, the version it copies; else the draft's (Tier.position), any tier the draft lacks last.
 */
async function publishedTierOrder(tx: Tx, tiers: string[], rolledBackFrom: number | null): Promise<string[]> {
  const source = rolledBackFrom
    ? ((await tx.policyVersion.findUnique({ where: { version: rolledBackFrom }, select: { tierOrder: true } }))?.tierOrder ?? [])
    : (await tx.tier.findMany({ orderBy: [{ position: "asc" }, { name: "asc" }], select: { name: true } })).map((t) => t.name);
  return source.length === 0 ? [] : orderByNames(tiers, source, (t) => t);
}

/** Writes `doc` with the key index and tokens to every region's Redis; returns the regions missed. */
async function writePublished(tx: Tx, redis: RedisLike, doc: CompiledPolicy, what: string, nowMs: number): Promise<string[]> {
  const keyIndex = await listKeyIndexEntries(tx);
  const serviceTokens = await listServiceTokenHashes(tx);
  const tenantTokens = await listTenantTokenHashes(tx);
  // With regions, each also gets the shares of `split` limits if it has none yet (equal ones).
  const regions = configuredRegions().map((r) => r.name);
  const write = async (r: RedisLike) => {
    await writePublishedPolicy(r, doc, { keyIndex, serviceTokens, tenantTokens });
    if (regions.length > 0) await seedRegionShares(r, regions, nowMs);
  };
  const outcome = await writeEveryRegion(tx, redis, what, write, nowMs);
  return outcome.missed.map((m) => m.region);
}

export async function publishPolicy(deps: PublishDeps, options: PublishOptions): Promise<PublishResult> {
  const nowMs = options.nowMs ?? Date.now();
  return deps.db.$transaction(
    async (tx) => {
      await lockPolicy(tx);
      return publishDraft(tx, deps.redis, { ...options, nowMs }, null);
    },
    { maxWait: 10_000, timeout: 60_000 },
  );
}

/**
 * Publishes the draft to everyone, in the caller's transaction holding the policy lock. `approved`:
 * the request a second person approved, which passes the gate for the draft it was made for only
 * (the same live version, the same draft checksum); anything else is a conflict, nothing published.
 */
export async function publishDraft(tx: Tx, redis: RedisLike | null, options: PublishOptions & { nowMs: number }, approved: ApprovalRecord | null): Promise<PublishResult> {
  const { nowMs } = options;
  await refuseDuringRollout(tx, "publish to everyone");
  const latest = await latestPolicyVersion(tx);
  const draft = await compileDraft(tx);
  const draftChecksum = policyChecksum(draft);
  const body = stampChanges(draft, liveBody(latest), nowMs);
  // A live row that does not validate (its body no longer matches its checksum) is never
  // "unchanged": the draft is published over it as a new version.
  const stored = latest ? parseCompiledPolicy(latest.document) : null;
  if (approved && (approved.liveVersion !== (latest?.version ?? 0) || approved.draftChecksum !== draftChecksum)) {
    throw new ServiceError("conflict", `${approved.id} approved a different draft (v${approved.liveVersion} was live when it was requested; the draft or the live version changed since): nothing published; publish again to request a new approval`, { field: "approval" });
  }
  if (latest && stored?.ok && latest.checksum === policyChecksum(body)) {
    // Nothing to publish. Rewrite the live document anyway (same version, same bytes), which
    // repairs a Redis that lost it and refreshes the key index; no new version, no audit entry.
    const regionsMissed = redis ? await writePublished(tx, redis, stored.value, `rewriting v${latest.version}`, nowMs) : [];
    return { status: "unchanged", version: latest.version, checksum: latest.checksum, previousVersion: latest.version, ...(regionsMissed.length > 0 ? { regionsMissed } : {}) };
  }
  if (latest && stored?.ok && !approved) {
    const caller = { actor: options.actor, role: options.role ?? null };
    const pending = await requireApproval(tx, { kind: "publish", live: stored.value, candidate: body, draftChecksum, cohort: null, caller, note: options.note ?? null, nowMs });
    if (pending) return { status: "approval_pending", version: latest.version, checksum: latest.checksum, previousVersion: latest.version, approval: pending };
  }
  const { doc, previousVersion, regionsMissed } = await publishBody(tx, redis, body, { actor: options.actor, note: options.note, nowMs });
  return { status: "published", version: doc.version, checksum: doc.checksum, previousVersion, ...(regionsMissed ? { regionsMissed } : {}) };
}
