/**
 * `sluice apply -f FILE` and `POST /api/v1/policy/apply`: make the draft hold exactly the policy of
 * a file. Declarative: operations, tiers, limits, quotas, global caps, tenants and overrides absent
 * from the file are deleted. One edit of the draft (lib/services/policy/edit-policy.ts: one transaction
 * under the policy lock, one validation, one audit entry per change): a file with one bad field
 * writes nothing, and applying the same file twice changes nothing the second time.
 *
 * API keys are the exception (mergeFileKeys in lib/policy/plan.ts): keys listed are created, or
 * rotated when the plaintext differs; keys NOT listed are left alone, since a file (often an
 * export) cannot know keys issued by `sluice keys create` or the UI, and deleting them would revoke
 * live clients. Revocation is an explicit act (`sluice keys revoke`). A key listed without
 * plaintext is created with a generated secret, returned once.
 */
import { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client";
import type { PolicySpec } from "../../policy/compile";
import { mergeFileKeys, type FileKey, type PolicyPlan } from "../../policy/plan";
import { formatPath, type PolicyFile } from "../../policy/policy-file";
import { editPolicy, type EditResult, type Editor } from "./edit-policy";
import { invalidPolicy } from "../errors";
import { parsePolicyInput, type PolicyInput } from "./policy-input";
import { displayPrefix, hashSecret } from "../access/secrets";

export type { PolicyInput } from "./policy-input";
export type ApplyResult = Omit<EditResult, "ids">;

/** `POST /api/v1/policy/apply`'s query: `dryRun=1|true` plans only; any other value is refused (a typo must not apply). */
export const applyQuerySchema = z.strictObject({
  dryRun: z.enum(["1", "true", "0", "false"], "expected 1, true, 0 or false").optional(),
});

/** The file minus its keys: the draft's policy. */
function specOf(file: PolicyFile): PolicySpec {
  return { ...file, tenants: file.tenants.map(({ keys: _keys, ...t }) => t) };
}

function fileKeysOf(file: PolicyFile): FileKey[] {
  return file.tenants.flatMap((t, ti) =>
    t.keys.map((k, ki) => ({
      tenant: t.slug,
      name: k.name,
      hash: k.key === undefined ? null : hashSecret(k.key),
      prefix: k.key === undefined ? null : displayPrefix(k.key),
      path: formatPath(["tenants", ti, "keys", ki, "key"]),
    })),
  );
}

/**
 * Applies a policy file (YAML/JSON text or an object). Throws ServiceError(invalid_policy) with
 * every issue's path, or ServiceError(forbidden) naming a field the role may not change (the role
 * defaults to admin: the CLI and the seed); writes nothing then. With `dryRun`, only plans.
 */
export async function applyPolicyFile(
  db: PrismaClient,
  input: PolicyInput,
  options: { actor: string; role?: Editor["role"]; dryRun?: boolean },
): Promise<ApplyResult> {
  const parsed = parsePolicyInput(input);
  if (!parsed.ok) throw invalidPolicy(parsed.issues);
  const file = parsed.value;
  const fileKeys = fileKeysOf(file);
  const { ids: _ids, ...result } = await editPolicy(
    db,
    (draft, context) => {
      const merged = mergeFileKeys(draft.keys, file.tenants.map((t) => t.slug), fileKeys);
      if (merged.issues.length > 0) throw invalidPolicy(merged.issues);
      merged.warnings.forEach(context.warn);
      return { spec: specOf(file), keys: merged.keys };
    },
    { actor: options.actor, role: options.role ?? "admin" },
    { dryRun: options.dryRun },
  );
  return result;
}

/** What applying `input` would change, without changing anything. */
export async function planPolicyFile(db: PrismaClient, input: PolicyInput): Promise<PolicyPlan> {
  return (await applyPolicyFile(db, input, { actor: "plan", dryRun: true })).plan;
}
