/**
 * What the limit advisor and capacity planner offer to choose from: the live version's tiers
 * (with their fair-share weights and how many active tenants each has), operations and global caps;
 * and the advisor page's query, validated.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import type { CompiledPolicy } from "../../policy/compiled";
import { adviseLimit, type AdvisorResult } from "./advisor";
import { ServiceError } from "../errors";
import { advisorInputSchema, fieldError, fieldErrors, type FieldError } from "./justify-input";
import { readPublishedVersion } from "../policy/published-version";

export interface JustifyContext {
  version: number;
  tiers: { name: string; weight: number; tenants: number }[];
  operations: string[];
  globalCaps: { id: string; operation: string; limit: number; windowMs: number; share: string }[];
}

export function contextOf(doc: CompiledPolicy): JustifyContext {
  const active = Object.values(doc.tenants).filter((t) => t.status === "active");
  return {
    version: doc.version,
    tiers: Object.values(doc.tiers).map((t) => ({ name: t.name, weight: t.weight, tenants: active.filter((x) => x.tier === t.name).length })),
    operations: Object.keys(doc.operations).sort(),
    globalCaps: doc.globalCaps.map((c) => ({ id: c.id, operation: c.operation, limit: c.limit, windowMs: c.windowMs, share: c.share })),
  };
}

/** The live version's context, or null before the first publish. */
export async function readJustifyContext(db: PrismaClient): Promise<JustifyContext | null> {
  try {
    return contextOf(await readPublishedVersion(db));
  } catch (error) {
    if (error instanceof ServiceError && error.code === "not_found") return null;
    throw error;
  }
}

/**
 * The advisor page's query: the form's raw values validated (errors name the field; a tier or
 * operation the live version lacks is an error too), then the advice, as of now.
 */
export async function adviseFromForm(
  db: PrismaClient,
  context: JustifyContext,
  raw: Record<string, string | undefined>,
  nowMs: number = Date.now(),
): Promise<{ errors: FieldError[]; result: AdvisorResult | null }> {
  const parsed = advisorInputSchema.safeParse({ ...raw, tier: raw.tier ?? context.tiers[0]?.name });
  if (!parsed.success) return { errors: fieldErrors(parsed.error), result: null };
  const q = parsed.data;
  const errors: FieldError[] = [];
  if (!context.tiers.some((t) => t.name === q.tier)) errors.push(fieldError("tier", `no tier named ${q.tier} in live v${context.version}`));
  if (q.operation !== "*" && !context.operations.includes(q.operation)) errors.push(fieldError("operation", `no operation named ${q.operation} in live v${context.version}`));
  if (errors.length > 0) return { errors, result: null };
  const result = await adviseLimit(db, { tier: q.tier, operation: q.operation, scope: q.scope, nowMs, proposed: q.limit === undefined ? null : { limit: q.limit, per: q.per } });
  return { errors, result };
}
