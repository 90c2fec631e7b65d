import type { Role } from "../policy/types";

declare module "next-auth" {
  interface Session {
    user: { id: string; email: string; role?: Role };
  }
}

declare module "next-auth/jwt" {
  interface JWT {
    role?: Role;
  }
}
