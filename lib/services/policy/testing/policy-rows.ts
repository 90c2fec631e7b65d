/** What the policy services' integration tests start from: the demo policy file and an empty draft. */
import { readFileSync } from "node:fs";
import type { PrismaClient } from "../../../generated/prisma/client";
import type { CompiledPolicy } from "../../../policy/compiled";
import { readCurrentPolicy, type RedisLike } from "../../../redis/policy";
import { applyPolicyFile } from "../apply-policy-file";
import { DEMO_POLICY_PATH } from "../seed-demo";

/** examples/demo-policy.yaml as text. */
export const DEMO = readFileSync(DEMO_POLICY_PATH, "utf8");

/** Deletes the draft, every published version and the audit trail (children before parents). */
export async function clearPolicy(db: PrismaClient): Promise<void> {
  await db.auditEntry.deleteMany();
  await db.policyVersion.deleteMany();
  await db.tenant.deleteMany();
  await db.tier.deleteMany();
  await db.operation.deleteMany();
  await db.globalCap.deleteMany();
  await db.policySettings.deleteMany();
}

/** An empty draft, then the demo policy applied to it by `actor` (not published). */
export async function draftDemo(db: PrismaClient, actor: string): Promise<void> {
  await clearPolicy(db);
  await applyPolicyFile(db, DEMO, { actor });
}

/** The version the decision servers read from Redis; throws when none is published. */
export async function livePolicy(redis: RedisLike): Promise<CompiledPolicy> {
  const current = await readCurrentPolicy(redis);
  if (current.status !== "ok") throw new Error(`no live policy: ${current.status}`);
  return current.policy;
}

/** `policy` with the free tier's per-key limit cut from 100 to 50 a minute: in the demo, a change that reaches 5 of its 12 tenants. */
export function cutFreeKeyLimit(policy: string): string {
  return policy.replace("scope: api_key, algorithm: sliding_window_counter, limit: 100, window: 1m", "scope: api_key, algorithm: sliding_window_counter, limit: 50, window: 1m");
}
