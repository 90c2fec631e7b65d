import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { runSluice } from "./testing/sluice-cli";
import { freshDatabasePerFile, testRedisPrefix, testRedisUrl } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { createUser } from "@/lib/services/access/create-user";
import { LOGIN_MAX_FAILURES, login, loginLockout } from "@/lib/auth/login";

const ROOT = path.resolve(import.meta.dirname, "..");
const DEMO = path.join(ROOT, "examples/demo-policy.yaml");

const fresh = freshDatabasePerFile();
let db: PrismaClient;

const sluice = (...args: string[]) =>
  runSluice({ DATABASE_URL: fresh.url, REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: `${testRedisPrefix()}cli:` }, args);

beforeAll(() => ({ db } = fresh));

describe("sluice CLI", () => {
  it("apply --dry-run prints the plan and writes nothing", async () => {
    const r = await sluice("apply", "-f", DEMO, "--dry-run");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("+ tier free");
    expect(r.stdout).toMatch(/\d+ to create, 0 to change, 0 to delete/);
    expect(r.stdout).toContain("Dry run: nothing was written.");
    expect(await db.tier.count()).toBe(0);
    expect(await db.auditEntry.count()).toBe(0);
  }, 150_000);

  it("a bad file exits 1 naming every failing path, without a stack trace, and writes nothing", async () => {
    const bad = path.join(tmpdir(), `sluice-bad-${process.pid}.yaml`);
    writeFileSync(bad, readFileSync(DEMO, "utf8").replace("leaseTtl: 30s }", "leaseTtl: soon }"));
    const r = await sluice("apply", "-f", bad);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error: tiers[0].limits[3].leaseTtl: expected a duration like 30s, got "soon"');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(await db.tier.count()).toBe(0);
  }, 150_000);

  it("apply, then apply again changes nothing; publish, then publish again says unchanged", async () => {
    const first = await sluice("apply", "-f", DEMO);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain("Applied.");
    const second = await sluice("apply", "-f", DEMO);
    expect(second.stdout).toContain("No changes.");
    const published = await sluice("publish");
    expect(published.stdout).toMatch(/^Published v1 /);
    const again = await sluice("publish");
    expect(again.stdout).toMatch(/^Policy unchanged: v1 is live/);
    const audit = await db.auditEntry.findFirstOrThrow({ where: { action: "policy.publish" } });
    expect(audit.actor).toMatch(/^cli:/);
  }, 400_000); // four process starts; tsx takes seconds each on a loaded machine

  it("users unlock clears a locked account's failures, audited as the CLI's actor; an unknown email exits 1", async () => {
    const email = "locked-out@example.com";
    expect((await createUser(db, { email, password: "correct-horse-7", role: "sre" }, "test")).ok).toBe(true);
    const now = Date.now();
    for (let i = 0; i < LOGIN_MAX_FAILURES; i++) await login(db, { email, password: `wrong-${i}` }, now, "198.51.100.1");
    expect(await loginLockout(db, email, now + 1, "198.51.100.1")).toMatchObject({ locked: true });
    const r = await sluice("users", "unlock", "--email", email);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Unlocked ${email} (${LOGIN_MAX_FAILURES} failed sign-ins cleared).`);
    expect(await loginLockout(db, email, Date.now(), "198.51.100.1")).toEqual({ locked: false });
    expect(await db.auditEntry.findFirst({ where: { action: "user.unlock" } })).toMatchObject({ actor: expect.stringMatching(/^cli:/) });
    const unknown = await sluice("users", "unlock", "--email", "nobody@example.com");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no user nobody@example.com");
  }, 150_000);
});
