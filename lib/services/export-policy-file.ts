/**
 * `sluice export` and `GET /api/v1/policy/export`: the policy in Postgres as a policy file. No
 * secrets: keys are listed by name only (unrevoked ones), which apply reads as "this key exists,
 * leave it alone", so `apply(export())` plans no change.
 */
import { z } from "zod";
import { stringify } from "yaml";
import type { PrismaClient } from "../generated/prisma/client";
import type { Tx } from "../db/client";
import { loadPolicyRows, rowsToSpec } from "../db/policy-repo";
import type { PolicyFileInput } from "../policy/policy-file";

/** Drops undefined members (YAML would print them as null). */
function clean<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** `GET /api/v1/policy/export`'s query: `format=yaml` (default) or `json`. */
export const exportQuerySchema = z.strictObject({ format: z.enum(["yaml", "json"], "expected yaml or json").optional() });

export async function exportPolicyObject(db: PrismaClient | Tx): Promise<PolicyFileInput> {
  const rows = await loadPolicyRows(db);
  const spec = rowsToSpec(rows);
  const keysBySlug = new Map(rows.tenants.map((t) => [t.slug, t.apiKeys.filter((k) => k.revokedAt === null)]));
  return clean({
    ...spec,
    tenants: spec.tenants.map((t) => ({ ...t, keys: (keysBySlug.get(t.slug) ?? []).map((k) => ({ name: k.name })) })),
  });
}

/** The policy file as YAML. */
export async function exportPolicyFile(db: PrismaClient | Tx): Promise<string> {
  const header = "# Exported by sluice. API keys are listed by name only; apply leaves them as they are.\n";
  return header + stringify(await exportPolicyObject(db), { lineWidth: 0 });
}
