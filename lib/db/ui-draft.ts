/** The draft policy (Postgres rows) in the policy file's shape, for editing pages and the simulator. */
import type { PrismaClient } from "../generated/prisma/client";
import type { PolicySpec } from "../policy/compile";
import { loadPolicyRows, rowsToSpec } from "./policy-repo";

export async function readDraftSpec(db: PrismaClient): Promise<PolicySpec> {
  return rowsToSpec(await loadPolicyRows(db));
}
