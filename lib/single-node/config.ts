/**
 * What SLUICE_MODE=single-node requires of the environment. The decision server refuses to start
 * with these messages (one per problem, each naming its variable); the worker, which needs only
 * DATABASE_URL, checks the same.
 */
import type { Env } from "../env";

export interface SingleNodeConfig {
  problems: string[];
  warnings: string[];
}

export function checkSingleNodeEnv(e: Pick<Env, "DATABASE_URL" | "REDIS_URL" | "REDIS_CLUSTER_NODES" | "SLUICE_INSTANCES">): SingleNodeConfig {
  const problems: string[] = [];
  const warnings: string[] = [];
  if (!e.DATABASE_URL) {
    problems.push("DATABASE_URL: required with SLUICE_MODE=single-node (the policy, API keys, service tokens and usage live in PostgreSQL)");
  }
  if (e.REDIS_CLUSTER_NODES) {
    problems.push("REDIS_CLUSTER_NODES: set, but SLUICE_MODE=single-node runs without Redis; unset it, or use SLUICE_MODE=redis");
  }
  if (e.SLUICE_INSTANCES !== 1) {
    problems.push(`SLUICE_INSTANCES: ${e.SLUICE_INSTANCES}, but SLUICE_MODE=single-node is exactly one decision server; set it to 1, or use SLUICE_MODE=redis`);
  }
  if (e.REDIS_URL) warnings.push("REDIS_URL is set but ignored: SLUICE_MODE=single-node never uses Redis");
  return { problems, warnings };
}

export class SingleNodeConfigError extends Error {
  constructor(problems: string[]) {
    super(`SLUICE_MODE=single-node is misconfigured:\n${problems.map((p) => `  ${p}`).join("\n")}`);
  }
}
