/**
 * next-auth 4 configuration: a credentials provider over the User table (bcrypt), JWT sessions
 * carrying id, email, role and a server-side session id (sid) that signing out revokes
 * (lib/auth/user-sessions.ts). The login lockout lives in lib/auth/login.ts.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { NextAuthOptions } from "next-auth";
import CredentialsProvider from "next-auth/providers/credentials";
import { db } from "../db/client";
import { login, type LoginResult } from "./login";
import { endSession, SESSION_MAX_AGE_S, startSession } from "./user-sessions";
import { ROLES, type Role } from "../policy/types";
import { authSecret } from "./secret";

/** The error code the login page maps to the lockout message (HTTP 429 from the auth route). */
export const RATE_LIMITED_ERROR = "RateLimited";


interface CheckedSignIn {
  credentials: { email: string; password: string };
  result: LoginResult;
}

/**
 * The sign-in route (app/api/auth/[...nextauth]) checks the credentials itself — counting and
 * checking in one step, so it can answer 429 — and hands the result to `authorize` through this,
 * so one request is one attempt.
 */
const checkedSignIn = new AsyncLocalStorage<CheckedSignIn>();

export function withCheckedSignIn<T>(checked: CheckedSignIn, fn: () => T): T {
  return checkedSignIn.run(checked, fn);
}

function isRole(value: unknown): value is Role {
  return typeof value === "string" && (ROLES as readonly string[]).includes(value);
}

export function authOptions(): NextAuthOptions {
  return {
    secret: authSecret(),
    session: { strategy: "jwt", maxAge: SESSION_MAX_AGE_S },
    pages: { signIn: "/login", error: "/login" },
    providers: [
      CredentialsProvider({
        name: "Email and password",
        credentials: {
          email: { label: "Email", type: "email" },
          password: { label: "Password", type: "password" },
        },
        async authorize(credentials) {
          const given = { email: credentials?.email ?? "", password: credentials?.password ?? "" };
          const checked = checkedSignIn.getStore();
          const result =
            checked && checked.credentials.email === given.email && checked.credentials.password === given.password
              ? checked.result
              : await login(db(), given, Date.now());
          if (result.ok) return { id: result.principal.id, email: result.principal.email, role: result.principal.role };
          if (result.reason === "rate_limited") throw new Error(RATE_LIMITED_ERROR);
          return null;
        },
      }),
    ],
    callbacks: {
      async jwt({ token, user }) {
        if (user) {
          token.sub = user.id;
          token.email = user.email;
          const role = (user as { role?: unknown }).role;
          if (isRole(role)) token.role = role;
          token.sid = await startSession(db(), user.id, Date.now());
        }
        return token;
      },
      async session({ session, token }) {
        session.user = {
          id: token.sub ?? "",
          email: token.email ?? "",
          role: isRole(token.role) ? token.role : undefined,
        };
        session.sid = token.sid;
        return session;
      },
    },
    events: {
      // The cookie is cleared by next-auth; the session it named ends here, so no copy of it works.
      async signOut({ token }) {
        if (token?.sid) await endSession(db(), token.sid, Date.now());
      },
    },
  };
}
