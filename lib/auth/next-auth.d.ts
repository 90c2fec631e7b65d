import type { Role } from "../policy/types";

declare module "next-auth" {
  interface Session {
    user: { id: string; email: string; role?: Role };
    /** The server-side session (lib/auth/user-sessions.ts). */
    sid?: string;
  }
}

declare module "next-auth/jwt" {
  interface JWT {
    role?: Role;
    /** The server-side session this token stands for; signing out ends it. */
    sid?: string;
  }
}
