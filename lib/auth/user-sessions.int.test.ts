/**
 * Sessions end on the server: a session cookie (next-auth JWT) signs its user in only while the
 * server-side session it names is open. Driven through next-auth's own callbacks and sign-out
 * event (lib/auth/options.ts), as a sign-in and a sign-out run them, against real PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JWT } from "next-auth/jwt";
import type { NextAuthOptions, Session, User } from "next-auth";
import { freshDatabase, type FreshDatabase } from "@/test/helpers";
import { createDb } from "@/lib/db/client";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { authOptions } from "@/lib/auth/options";
import { createUser, setUserDisabled } from "../services/access/create-user";
import { SESSION_MAX_AGE_S, sessionPrincipal } from "./user-sessions";

let fresh: FreshDatabase;
let db: PrismaClient;
let userId: string;

beforeAll(async () => {
  fresh = await freshDatabase();
  process.env.DATABASE_URL = fresh.url;
  db = createDb(fresh.url);
  const r = await createUser(db, { email: "ses@example.com", password: "correct-horse-5", role: "sre" }, "test");
  if (!r.ok) throw new Error(r.message);
  userId = r.user.id;
});
afterAll(async () => {
  await db?.$disconnect();
  await fresh?.drop();
});

type Callbacks = Required<NonNullable<NextAuthOptions["callbacks"]>>;
type Events = Required<NonNullable<NextAuthOptions["events"]>>;
const callbacks = () => authOptions().callbacks as Callbacks;
const events = () => authOptions().events as Events;

/** What next-auth does on a successful sign-in: the jwt callback with the user, once. */
async function signIn(): Promise<JWT> {
  const user = { id: userId, email: "ses@example.com", role: "sre" } as User;
  return callbacks().jwt({ token: {}, user, account: null, trigger: "signIn" } as Parameters<Callbacks["jwt"]>[0]);
}

/** What a later request with that cookie resolves to (lib/auth/session.ts currentPrincipal). */
async function principalOf(token: JWT, nowMs = Date.now()) {
  const session = (await callbacks().session({ session: { expires: "" }, token } as unknown as Parameters<Callbacks["session"]>[0])) as Session;
  return sessionPrincipal(db, { userId: session.user.id, sessionId: session.sid }, nowMs);
}

/** next-auth's sign-out: it clears the cookie and fires this event with the token. */
async function signOut(token: JWT): Promise<void> {
  await events().signOut({ token, session: undefined } as unknown as Parameters<Events["signOut"]>[0]);
}

describe("sessions end on the server", () => {
  it("after sign-out, a copy of the session cookie taken before signs nobody in; another session of the user stays open", async () => {
    const tab = await signIn();
    const other = await signIn();
    expect(tab.sid).toEqual(expect.any(String));
    expect(tab.sid).not.toBe(other.sid);
    expect(await principalOf(tab)).toEqual({ id: userId, email: "ses@example.com", role: "sre" });
    const stolen = structuredClone(tab);
    await signOut(tab);
    expect(await principalOf(stolen)).toBeNull();
    expect(await principalOf(other)).toMatchObject({ id: userId });
  });

  it("a session ends when its time is up, and a token without a session (issued before sessions) signs nobody in", async () => {
    const token = await signIn();
    expect(await principalOf(token, Date.now() + (SESSION_MAX_AGE_S - 60) * 1000)).not.toBeNull();
    expect(await principalOf(token, Date.now() + (SESSION_MAX_AGE_S + 60) * 1000)).toBeNull();
    expect(await principalOf({ ...token, sid: undefined })).toBeNull();
    expect(await principalOf({ ...token, sub: "someone-else" })).toBeNull();
  });

  it("disabling a user ends their sessions for good: enabling them again does not bring the old cookies back", async () => {
    const token = await signIn();
    await setUserDisabled(db, { userId, disabled: true }, "test", Date.now());
    expect(await principalOf(token)).toBeNull();
    await setUserDisabled(db, { userId, disabled: false }, "test", Date.now());
    expect(await principalOf(token)).toBeNull();
    expect(await principalOf(await signIn())).toMatchObject({ id: userId });
  });
});
