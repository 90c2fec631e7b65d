/**
 * Sign-in with email and password, and its lockout (docs/security.md "Sign-in lockout"):
 *
 * - Per account and client address: after 5 failures within 15 minutes from one address, that
 *   address gets `rate_limited` (HTTP 429) for the account until the oldest of them is 15 minutes
 *   old. Another address (the owner's) is not locked by it.
 * - Per account: after 50 failures within 15 minutes from any addresses, every address is locked
 *   the same way (a ceiling for guessing from many addresses).
 * - A successful sign-in, or an administrator's unlock (`sluice users unlock`, the Settings page),
 *   clears the account's failures.
 * - An unknown email and a wrong password give the same answer, in the same time, and both count.
 *
 * The count and the check are one atomic step: under a per-account advisory lock, one statement
 * counts the failures and records this attempt as a failure only when it is allowed; the password
 * is checked after that, and a right one turns the row into a success. So N concurrent wrong
 * passwords get exactly 5 password checks, whatever N.
 */
import { z } from "zod";
import type { PrismaClient } from "../generated/prisma/client";
import { dummyVerify, verifyPassword } from "./password";
import type { Principal } from "./require-role";
import { writeAudit } from "../db/audit";
import type { Tx } from "../db/client";
import type { Role } from "../policy/types";

/** Failures allowed per account and client address in LOGIN_WINDOW_MS. */
export const LOGIN_MAX_FAILURES = 5;
/** Failures allowed per account from all addresses together in LOGIN_WINDOW_MS. */
export const LOGIN_ACCOUNT_MAX_FAILURES = 50;
export const LOGIN_WINDOW_MS = 15 * 60_000;
/** The one message for an unknown email and a wrong password. */
export const LOGIN_INVALID_MESSAGE = "Wrong email or password.";
/** The client address of a sign-in whose address is unknown (every such sign-in shares it). */
export const UNKNOWN_LOGIN_ADDRESS = "unknown";

export const loginInputSchema = z.strictObject({
  email: z.string().trim().toLowerCase().email("expected an email address").max(320),
  password: z.string().min(1, "enter your password").max(1024),
});
export type LoginInput = z.input<typeof loginInputSchema>;

export type LoginResult =
  | { ok: true; principal: Principal }
  | { ok: false; reason: "invalid"; message: string }
  | { ok: false; reason: "rate_limited"; message: string; retryAfterSeconds: number };

export type Lockout = { locked: false } | { locked: true; retryAfterSeconds: number; scope: "client" | "account" };

/** pg_advisory_xact_lock(LOCK_CLASS, hashtext(email)): one sign-in of an account counts at a time. */
const LOCK_CLASS = 7_370_101;

const countsRow = z.object({
  /** The id of the attempt recorded (allowed), or null (refused). */
  id: z.union([z.bigint(), z.number(), z.string()]).nullable(),
  clientFailures: z.union([z.bigint(), z.number()]).transform(Number),
  accountFailures: z.union([z.bigint(), z.number()]).transform(Number),
  /** The LOGIN_MAX_FAILURES-th newest failure from this address, and the account's ceiling-th. */
  clientOldest: z.date().nullable(),
  accountOldest: z.date().nullable(),
});

function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

function lockoutOf(row: z.infer<typeof countsRow>, nowMs: number): Lockout {
  const until = (oldest: Date | null) => Math.max(1, Math.ceil(((oldest?.getTime() ?? nowMs) + LOGIN_WINDOW_MS - nowMs) / 1000));
  if (row.accountFailures >= LOGIN_ACCOUNT_MAX_FAILURES) return { locked: true, scope: "account", retryAfterSeconds: until(row.accountOldest) };
  if (row.clientFailures >= LOGIN_MAX_FAILURES) return { locked: true, scope: "client", retryAfterSeconds: until(row.clientOldest) };
  return { locked: false };
}

/**
 * The failures that count (since the window start, the last success and the last unlock) and,
 * with `record`, this attempt recorded as a failure when neither limit is reached yet. One
 * statement; with `record` it runs after the account's advisory lock in the same transaction.
 */
function countAndMaybeRecord(q: Pick<Tx, "$queryRaw">, email: string, clientAddress: string, nowMs: number, record: boolean) {
  const now = new Date(nowMs);
  const since = new Date(nowMs - LOGIN_WINDOW_MS);
  return q.$queryRaw<unknown[]>`
    WITH reset AS (
      SELECT GREATEST(${since}::timestamp(3),
        COALESCE((SELECT max("at") FROM "LoginAttempt" WHERE "email" = ${email} AND "succeeded" AND "at" > ${since}::timestamp(3)), ${since}::timestamp(3))) AS t
    ), recent AS (
      SELECT a."at", a."clientAddress" FROM "LoginAttempt" a, reset
      WHERE a."email" = ${email} AND NOT a."succeeded" AND a."at" > reset.t
    ), counts AS (
      SELECT count(*) FILTER (WHERE "clientAddress" = ${clientAddress}) AS "clientFailures", count(*) AS "accountFailures" FROM recent
    ), ins AS (
      INSERT INTO "LoginAttempt" ("email", "clientAddress", "at", "succeeded")
      SELECT ${email}, ${clientAddress}, ${now}::timestamp(3), false FROM counts
      WHERE ${record} AND "clientFailures" < ${LOGIN_MAX_FAILURES} AND "accountFailures" < ${LOGIN_ACCOUNT_MAX_FAILURES}
      RETURNING "id"
    )
    SELECT (SELECT "id" FROM ins) AS "id", c."clientFailures", c."accountFailures",
      (SELECT "at" FROM recent WHERE "clientAddress" = ${clientAddress} ORDER BY "at" DESC OFFSET ${LOGIN_MAX_FAILURES - 1} LIMIT 1) AS "clientOldest",
      (SELECT "at" FROM recent ORDER BY "at" DESC OFFSET ${LOGIN_ACCOUNT_MAX_FAILURES - 1} LIMIT 1) AS "accountOldest"
    FROM counts c`;
}

function lockAccount(q: Pick<Tx, "$executeRaw">, email: string) {
  return q.$executeRaw`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int, hashtext(${email}))`;
}

/**
 * A transaction here holds the account's lock for one statement, but it waits behind every
 * concurrent sign-in of the account and behind password hashing on the same event loop: Prisma's
 * default 2 s / 5 s bounds are too short for a burst of them on a busy machine.
 */
const LOCK_TX = { maxWait: 10_000, timeout: 20_000 } as const;

/** Counts, and records the attempt when allowed, in one transaction under the account's lock. */
async function countAndRecord(db: PrismaClient, email: string, clientAddress: string, nowMs: number) {
  const rows = await db.$transaction(async (tx) => {
    await lockAccount(tx, email);
    return countAndMaybeRecord(tx, email, clientAddress, nowMs, true);
  }, LOCK_TX);
  return countsRow.parse(rows[0]);
}

/** Whether `email` is locked for `clientAddress` right now, and for how long. Reads only. */
export async function loginLockout(db: PrismaClient, email: string, nowMs: number, clientAddress: string = UNKNOWN_LOGIN_ADDRESS): Promise<Lockout> {
  const rows = await countAndMaybeRecord(db, normalizeEmail(email), clientAddress, nowMs, false);
  return lockoutOf(countsRow.parse(rows[0]), nowMs);
}

function rateLimited(lockout: Extract<Lockout, { locked: true }>): LoginResult {
  const minutes = Math.ceil(lockout.retryAfterSeconds / 60);
  return {
    ok: false,
    reason: "rate_limited",
    retryAfterSeconds: lockout.retryAfterSeconds,
    message: `Too many failed sign-ins for this account. Try again in ${minutes} minute${minutes === 1 ? "" : "s"}, or ask an administrator to unlock it.`,
  };
}

/**
 * Checks the credentials from `clientAddress` and records the attempt. Never throws for bad input:
 * it answers `invalid`.
 */
export async function login(db: PrismaClient, input: unknown, nowMs: number, clientAddress: string = UNKNOWN_LOGIN_ADDRESS): Promise<LoginResult> {
  const parsed = loginInputSchema.safeParse(input);
  if (!parsed.success) return { ok: false, reason: "invalid", message: LOGIN_INVALID_MESSAGE };
  const { email, password } = parsed.data;

  const counted = await countAndRecord(db, email, clientAddress, nowMs);
  if (counted.id === null) {
    const lockout = lockoutOf(counted, nowMs);
    // Refused without a row: the limit was reached by the attempts already counted.
    return rateLimited(lockout.locked ? lockout : { locked: true, scope: "client", retryAfterSeconds: 1 });
  }

  const user = await db.user.findUnique({ where: { email } });
  let ok = false;
  if (user && !user.disabledAt) ok = await verifyPassword(password, user.passwordHash);
  else await dummyVerify(password);
  if (!ok || !user) return { ok: false, reason: "invalid", message: LOGIN_INVALID_MESSAGE };

  await db.loginAttempt.update({ where: { id: BigInt(counted.id) }, data: { succeeded: true } });
  return { ok: true, principal: { id: user.id, email: user.email, role: user.role as Role } };
}

/**
 * An administrator's way back in for a locked account: clears its failures (a success row with no
 * client address, which the count starts after) and writes `user.unlock` to the audit log.
 * Returns null when no user has this email.
 */
export async function unlockLogin(
  db: PrismaClient,
  who: { email: string } | { userId: string },
  actor: string,
  nowMs: number,
): Promise<{ email: string; cleared: number } | null> {
  return db.$transaction(async (tx) => {
    const user = await tx.user.findUnique({
      where: "email" in who ? { email: normalizeEmail(who.email) } : { id: who.userId },
      select: { id: true, email: true },
    });
    if (!user) return null;
    const normalized = user.email;
    await lockAccount(tx, normalized);
    const [{ cleared }] = z
      .array(z.object({ cleared: z.union([z.bigint(), z.number()]).transform(Number) }))
      .length(1)
      .parse(
        await tx.$queryRaw`
          WITH reset AS (
            SELECT COALESCE(max("at"), ${new Date(nowMs - LOGIN_WINDOW_MS)}::timestamp(3)) AS t FROM "LoginAttempt"
            WHERE "email" = ${normalized} AND "succeeded" AND "at" > ${new Date(nowMs - LOGIN_WINDOW_MS)}::timestamp(3)
          ), ins AS (
            INSERT INTO "LoginAttempt" ("email", "clientAddress", "at", "succeeded") VALUES (${normalized}, NULL, ${new Date(nowMs)}::timestamp(3), true)
          )
          SELECT count(*) AS cleared FROM "LoginAttempt" a, reset WHERE a."email" = ${normalized} AND NOT a."succeeded" AND a."at" > reset.t`,
      );
    await writeAudit(tx, {
      actor,
      action: "user.unlock",
      entity: "user",
      entityId: user.id,
      before: { email: user.email, failures: cleared },
      after: { email: user.email, failures: 0 },
    });
    return { email: user.email, cleared };
  }, LOCK_TX);
}
