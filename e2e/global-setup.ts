/**
 * Creates and migrates the e2e database chosen in playwright.config.ts, seeds one user per role,
 * applies examples/demo-policy.yaml (if present) and publishes it as version 1.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { E2E } from "../playwright.config";
import { migrate } from "../lib/db/migrate";
import { createDb } from "../lib/db/client";
import { createRedisClient } from "../lib/redis/client";
import { createUser } from "../lib/services/access/create-user";
import { applyPolicyFile } from "../lib/services/policy/apply-policy-file";
import { publishPolicy } from "../lib/services/policy/publish-policy";
import { PASSWORD, USERS } from "./fixtures";

export default async function globalSetup(): Promise<void> {
  const name = new URL(E2E.databaseUrl).pathname.slice(1);
  const admin = new pg.Client({ connectionString: E2E.baseDatabaseUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  await migrate(E2E.databaseUrl);
  process.env.SLUICE_REDIS_PREFIX = E2E.redisPrefix;
  const db = createDb(E2E.databaseUrl);
  const redis = createRedisClient({ url: E2E.redisUrl, commandTimeoutMs: 5_000 });
  try {
    for (const [role, email] of Object.entries(USERS)) {
      const r = await createUser(db, { email, password: PASSWORD, role, name: `E2E ${role}` }, "e2e-seed");
      if (!r.ok) throw new Error(`seeding ${email}: ${r.message}`);
    }
    const demo = path.resolve(import.meta.dirname, "../examples/demo-policy.yaml");
    if (existsSync(demo)) {
      await applyPolicyFile(db, readFileSync(demo, "utf8"), { actor: "e2e-seed" });
      await publishPolicy({ db, redis }, { actor: "e2e-seed", note: "demo policy" });
    }
  } finally {
    await db.$disconnect();
    redis.disconnect();
  }
}
