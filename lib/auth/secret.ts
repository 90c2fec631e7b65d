/**
 * The next-auth signing secret. Required in production; in development, tests and the demo,
 * when NEXTAUTH_SECRET is unset, a stable secret is derived from the database URL so that
 * sessions survive restarts of the same install (documented in docs/configuration.md and .env.example).
 */
import { createHash } from "node:crypto";
import { currentEnv, type Env } from "../env";

type SecretSettings = Pick<Env, "NEXTAUTH_SECRET" | "NODE_ENV" | "SLUICE_DEMO" | "DATABASE_URL">;

function settings(): SecretSettings {
  return {
    NEXTAUTH_SECRET: currentEnv("NEXTAUTH_SECRET"),
    NODE_ENV: currentEnv("NODE_ENV"),
    SLUICE_DEMO: currentEnv("SLUICE_DEMO"),
    DATABASE_URL: currentEnv("DATABASE_URL"),
  };
}

export function authSecret(environment: SecretSettings = settings()): string {
  const configured = environment.NEXTAUTH_SECRET;
  if (configured) return configured;
  if (environment.NODE_ENV === "production" && environment.SLUICE_DEMO !== "1") {
    throw new Error("NEXTAUTH_SECRET is required in production (at least 16 characters): openssl rand -base64 32");
  }
  const seed = environment.DATABASE_URL ?? "sluice-embedded";
  return createHash("sha256").update(`sluice-dev-secret:${seed}`).digest("base64url");
}
