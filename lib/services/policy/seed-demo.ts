/**
 * Seeds the demo: the example policy file, one user per role, and a published first version.
 * Idempotent — running it again on the same database changes nothing (apply and publish both say
 * "unchanged"), so `npm run demo` can be started any number of times on the same `.data/`.
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { PrismaClient } from "../../generated/prisma/client";
import type { Role } from "../../policy/types";
import type { RedisLike } from "../../redis/policy";
import { applyPolicyFile } from "./apply-policy-file";
import { createUser } from "../access/create-user";
import { publishPolicy, type PublishResult } from "./publish-policy";

export const DEMO_POLICY_PATH = path.resolve(import.meta.dirname, "../../../examples/demo-policy.yaml");

/** Demo credentials, printed by `npm run demo`. Never used outside the demo and the tests. */
export const DEMO_PASSWORD = "sluice-demo-password";
export const DEMO_USERS: ReadonlyArray<{ email: string; role: Role; name: string }> = [
  { email: "admin@sluice.local", role: "admin", name: "Ada Admin" },
  { email: "product@sluice.local", role: "product", name: "Pat Product" },
  { email: "sre@sluice.local", role: "sre", name: "Sam SRE" },
  { email: "billing@sluice.local", role: "billing", name: "Bea Billing" },
];

export interface SeedResult {
  policyChanges: number;
  usersCreated: string[];
  publish: PublishResult;
}

/** `redis` null: single-node mode, the published version lives in Postgres only. */
export async function seedDemo(deps: { db: PrismaClient; redis: RedisLike | null }, actor = "demo-seed"): Promise<SeedResult> {
  const file = await fs.readFile(DEMO_POLICY_PATH, "utf8");
  const applied = await applyPolicyFile(deps.db, file, { actor });
  const p = applied.plan;
  const policyChanges = [p.created, p.changed, p.deleted].reduce((n, list) => n + list.length, 0);

  const usersCreated: string[] = [];
  for (const user of DEMO_USERS) {
    const result = await createUser(deps.db, { ...user, password: DEMO_PASSWORD }, actor);
    if (result.ok) usersCreated.push(user.email);
  }
  const publish = await publishPolicy(deps, { actor, note: "demo seed" });
  return { policyChanges, usersCreated, publish };
}
