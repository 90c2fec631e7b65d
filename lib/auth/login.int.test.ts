import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb } from "../db/client";
import type { PrismaClient } from "../generated/prisma/client";
import { createUser } from "../services/access/create-user";
import { LOGIN_ACCOUNT_MAX_FAILURES, LOGIN_INVALID_MESSAGE, LOGIN_MAX_FAILURES, LOGIN_WINDOW_MS, login, loginLockout, unlockLogin } from "./login";

let db: PrismaClient;
const T0 = Date.UTC(2026, 11, 2, 12, 0, 0);

beforeAll(async () => {
  db = createDb(process.env.DATABASE_URL);
  const r = await createUser(db, { email: "Pat@Example.com", password: "correct-horse-1", role: "product" }, "test");
  expect(r.ok).toBe(true);
  await createUser(db, { email: "sam@example.com", password: "correct-horse-2", role: "sre" }, "test");
  await createUser(db, { email: "dee@example.com", password: "correct-horse-3", role: "billing" }, "test");
  for (const email of ["par@example.com", "own@example.com", "cei@example.com"]) {
    await createUser(db, { email, password: "correct-horse-9", role: "product" }, "test");
  }
});

async function checkedAttempts(email: string): Promise<number> {
  return db.loginAttempt.count({ where: { email } });
}

afterAll(async () => {
  await db.$disconnect();
});

describe("sign-in", () => {
  it("accepts the right password (email case-insensitive) and returns the role", async () => {
    const r = await login(db, { email: "pat@example.com", password: "correct-horse-1" }, T0);
    expect(r).toMatchObject({ ok: true, principal: { email: "pat@example.com", role: "product" } });
  });

  it("stores the password as a bcrypt hash of cost 12, never the plaintext", async () => {
    const user = await db.user.findUniqueOrThrow({ where: { email: "pat@example.com" } });
    expect(user.passwordHash).toMatch(/^\$2[aby]\$12\$/);
    expect(user.passwordHash).not.toContain("correct-horse-1");
  });

  it("gives the same answer for an unknown user and a wrong password", async () => {
    const unknown = await login(db, { email: "nobody@example.com", password: "whatever-123" }, T0);
    const wrong = await login(db, { email: "sam@example.com", password: "wrong-password" }, T0);
    expect(unknown).toEqual({ ok: false, reason: "invalid", message: LOGIN_INVALID_MESSAGE });
    expect(wrong).toEqual(unknown);
  });

  it("locks an account after 5 failures in 15 minutes (429), even for the right password, until the window passes", async () => {
    const email = "dee@example.com";
    for (let i = 0; i < 5; i++) {
      const r = await login(db, { email, password: `nope-${i}` }, T0 + i * 1000);
      expect(r).toMatchObject({ ok: false, reason: "invalid" });
    }
    const locked = await login(db, { email, password: "correct-horse-3" }, T0 + 10_000);
    expect(locked).toMatchObject({ ok: false, reason: "rate_limited" });
    if (!locked.ok && locked.reason === "rate_limited") {
      // The oldest failure (T0) leaves the window at T0 + 15 min: 890 s after T0 + 10 s.
      expect(locked.retryAfterSeconds).toBe(890);
    }
    // Another account is not affected.
    expect((await login(db, { email: "pat@example.com", password: "correct-horse-1" }, T0 + 10_000)).ok).toBe(true);
    // After the window the right password works again.
    const later = await login(db, { email, password: "correct-horse-3" }, T0 + LOGIN_WINDOW_MS + 5_000);
    expect(later.ok).toBe(true);
  });

  it("rate-limits unknown accounts too, so probing cannot tell them apart", async () => {
    const email = "ghost@example.com";
    for (let i = 0; i < 5; i++) await login(db, { email, password: "x-password" }, T0 + i);
    expect(await loginLockout(db, email, T0 + 100)).toMatchObject({ locked: true });
    expect(await login(db, { email, password: "x-password" }, T0 + 100)).toMatchObject({ reason: "rate_limited" });
  });

  it("refuses a disabled user with the same message", async () => {
    await db.user.update({ where: { email: "sam@example.com" }, data: { disabledAt: new Date(T0) } });
    const r = await login(db, { email: "sam@example.com", password: "correct-horse-2" }, T0 + 2 * LOGIN_WINDOW_MS);
    expect(r).toEqual({ ok: false, reason: "invalid", message: LOGIN_INVALID_MESSAGE });
  });

  it("rejects a duplicate email and a short password as field errors", async () => {
    expect(await createUser(db, { email: "pat@example.com", password: "long-enough-1", role: "sre" }, "test")).toMatchObject({ ok: false, field: "email" });
    expect(await createUser(db, { email: "new@example.com", password: "short", role: "sre" }, "test")).toMatchObject({ ok: false, field: "password" });
  });

  it("counts and checks in one step: 30 concurrent wrong passwords get exactly 5 password checks, the other 25 are 429", async () => {
    const email = "par@example.com";
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => login(db, { email, password: `wrong-${i}` }, T0 + 1000, "203.0.113.9")),
    );
    expect(results.filter((r) => !r.ok && r.reason === "invalid")).toHaveLength(LOGIN_MAX_FAILURES);
    expect(results.filter((r) => !r.ok && r.reason === "rate_limited")).toHaveLength(30 - LOGIN_MAX_FAILURES);
    // Only the checked attempts are recorded.
    expect(await checkedAttempts(email)).toBe(LOGIN_MAX_FAILURES);
    // Locked now, for this address, even with the right password.
    expect(await login(db, { email, password: "correct-horse-9" }, T0 + 2000, "203.0.113.9")).toMatchObject({ reason: "rate_limited" });
  });

  it("a lock from one client address does not lock the owner out from another; the owner's success clears it", async () => {
    const email = "own@example.com";
    for (let i = 0; i < 8; i++) await login(db, { email, password: `attack-${i}` }, T0 + i, "198.51.100.66");
    expect(await loginLockout(db, email, T0 + 100, "198.51.100.66")).toMatchObject({ locked: true, scope: "client" });
    expect(await loginLockout(db, email, T0 + 100, "192.0.2.10")).toEqual({ locked: false });
    expect((await login(db, { email, password: "correct-horse-9" }, T0 + 200, "192.0.2.10")).ok).toBe(true);
    // The success cleared the account's failures: the attacking address gets 5 more checks, not 0.
    expect(await loginLockout(db, email, T0 + 300, "198.51.100.66")).toEqual({ locked: false });
  });

  it("locks the account from every address after 50 failures from many; an administrator's unlock (audited) lets the owner in", async () => {
    const email = "cei@example.com";
    // 49 failures from 49 addresses already recorded (a password check takes a second here) …
    for (let i = 0; i < LOGIN_ACCOUNT_MAX_FAILURES - 1; i++) {
      await db.$executeRaw`INSERT INTO "LoginAttempt" ("email", "clientAddress", "at", "succeeded") VALUES (${email}, ${`198.51.100.${i}`}, ${new Date(T0 + i)}::timestamp(3), false)`;
    }
    // … then six at once from six more: one is checked, the ceiling refuses the other five.
    const spray = await Promise.all(Array.from({ length: 6 }, (_, i) => login(db, { email, password: `spray-${i}` }, T0 + 100, `203.0.113.${i}`)));
    expect(spray.filter((r) => !r.ok && r.reason === "invalid")).toHaveLength(1);
    expect(await checkedAttempts(email)).toBe(LOGIN_ACCOUNT_MAX_FAILURES);
    const owner = await login(db, { email, password: "correct-horse-9" }, T0 + 1000, "192.0.2.20");
    expect(owner).toMatchObject({ ok: false, reason: "rate_limited" });
    if (!owner.ok && owner.reason === "rate_limited") expect(owner.retryAfterSeconds).toBe(LOGIN_WINDOW_MS / 1000 - 1);

    expect(await unlockLogin(db, { email: "CEI@example.com" }, "user:admin@example.com", T0 + 2000)).toEqual({ email, cleared: LOGIN_ACCOUNT_MAX_FAILURES });
    const user = await db.user.findUniqueOrThrow({ where: { email } });
    const audit = await db.auditEntry.findFirst({ where: { action: "user.unlock", entityId: user.id } });
    expect(audit).toMatchObject({ actor: "user:admin@example.com", before: { email, failures: LOGIN_ACCOUNT_MAX_FAILURES } });
    expect((await login(db, { email, password: "correct-horse-9" }, T0 + 3000, "192.0.2.20")).ok).toBe(true);
    expect(await unlockLogin(db, { email: "nobody-here@example.com" }, "user:admin@example.com", T0)).toBeNull();
  });
});
