/**
 * `sluice export` and `GET /api/v1/policy/export`: the policy in Postgres as a policy file. No
 * secrets: keys are listed by name only (unrevoked ones), which apply reads as "this key exists,
 * leave it alone", so `apply(export())` plans no change.
 */
import { z } from "zod";
import { stringify } from "yaml";
import type { PrismaClient } from "../../generated/prisma/client";
import type { Tx } from "../../db/client";
import { loadPolicyRows, rowsToSpec } from "../../db/policy-repo";
import { bodyOf } from "../../policy/compile";
import { specFromDocument } from "../../policy/decompile";
import type { PolicyFileInput } from "../../policy/policy-file";
import { readLivePolicy } from "./draft-view";
import { ServiceError } from "../errors";

/** Drops undefined members (YAML would print them as null). */
function clean<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** `GET /api/v1/policy/export`'s query: `format=yaml` (default) or `json`; `version=draft` (default) or `live`. */
export const exportQuerySchema = z.strictObject({
  format: z.enum(["yaml", "json"], "expected yaml or json").optional(),
  version: z.enum(["draft", "live"], "expected draft or live").optional(),
});

export async function exportPolicyObject(db: PrismaClient | Tx): Promise<PolicyFileInput> {
  const rows = await loadPolicyRows(db);
  const spec = rowsToSpec(rows);
  const keysBySlug = new Map(rows.tenants.map((t) => [t.slug, t.apiKeys.filter((k) => k.revokedAt === null)]));
  return clean({
    ...spec,
    tenants: spec.tenants.map((t) => ({ ...t, keys: (keysBySlug.get(t.slug) ?? []).map((k) => ({ name: k.name })) })),
  });
}

/**
 * The live (published) version as a policy file, spelled like the draft where they compile alike
 * (lib/policy/decompile.ts); keys by name, as in the draft's export. not_found before a first publish.
 */
export async function exportLivePolicyObject(db: PrismaClient): Promise<{ version: number; file: PolicyFileInput }> {
  const live = await readLivePolicy(db);
  if (!live) throw new ServiceError("not_found", "nothing is published yet: export the draft instead", { field: "version" });
  const rows = await loadPolicyRows(db);
  const spec = specFromDocument(bodyOf(live), rowsToSpec(rows));
  const keysBySlug = new Map(rows.tenants.map((t) => [t.slug, t.apiKeys.filter((k) => k.revokedAt === null)]));
  return {
    version: live.version,
    file: clean({ ...spec, tenants: spec.tenants.map((t) => ({ ...t, keys: (keysBySlug.get(t.slug) ?? []).map((k) => ({ name: k.name })) })) }),
  };
}

const HEADER = "# Exported by sluice. API keys are listed by name only; apply leaves them as they are.\n";

/** The policy file as YAML. */
export async function exportPolicyFile(db: PrismaClient | Tx): Promise<string> {
  return HEADER + stringify(await exportPolicyObject(db), { lineWidth: 0 });
}

/** The live version as YAML, saying which version it is. */
export async function exportLivePolicyFile(db: PrismaClient): Promise<{ version: number; yaml: string }> {
  const { version, file } = await exportLivePolicyObject(db);
  return { version, yaml: `# Live policy v${version}.\n${HEADER}${stringify(file, { lineWidth: 0 })}` };
}
