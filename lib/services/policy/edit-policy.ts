/**
 * The one way to change the draft policy. Every change — `sluice apply -f`, `POST
 * /api/v1/policy/apply`, every UI edit of operations, tiers, limits, quotas, global caps, failure
 * modes, tenants, overrides and API keys — is an `edit` of the draft run here:
 *
 *   1. one Postgres transaction holding the policy lock (the lock publish and rollback take too),
 *      so edits are serialized: each one reads the draft as the previous one left it, and none can
 *      undo another's change;
 *   2. the edit turns the draft (policy + keys) into the desired draft, or throws a ServiceError
 *      (a domain rule: "a tier named free already exists");
 *   3. one validation (validatePolicySpec: the policy file's rules, then the compiler's), so the
 *      draft always compiles; issues name their file path (`tiers[2].limits[0].window`);
 *   4. the plan (lib/policy/plan.ts) and the role check of every field it changes
 *      (lib/auth/permissions.ts: failure modes need failure_mode.set, keys keys.manage, …);
 *   5. the writer (lib/db/policy-writer.ts): the changed rows and one audit entry per change;
 *   6. `afterWrite`, still inside the transaction (the Redis key index of a new or revoked key:
 *      if Redis refuses, nothing is written).
 *
 * Changes the draft only: decision servers see them after `publish` (keys excepted: their index
 * is written at once by the key services).
 */
import type { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client";
import { deniedChanges } from "../../auth/permissions";
import { loadPolicyRows, lockPolicy } from "../../db/policy-repo";
import { draftFromRows, writePlan, type RowIds } from "../../db/policy-writer";
import type { Tx } from "../../db/client";
import { validatePolicySpec } from "../../policy/compile";
import { planIsEmpty, planPolicy, type Draft, type PolicyPlan } from "../../policy/plan";
import { formatPath, issuesFromZod } from "../../policy/policy-file";
import type { Role } from "../../policy/types";
import { invalidPolicy, ServiceError } from "../errors";
import { displayPrefix, generateSecret, hashSecret } from "../access/secrets";

/** Who is editing: the audit actor and the role every changed field is checked against. */
export interface Editor {
  /** `user:<email>`, `token:<prefix>`, `cli:<os user>`. */
  actor: string;
  /** The CLI and the demo seed act as admin (whoever runs them holds the database's credentials). */
  role: Role;
}

export interface EditContext {
  /** Report something the edit will not do, shown with the plan (`! key acme/web is revoked …`). */
  warn(message: string): void;
  /** The id of every row of the draft, by entity and natural key (the UI names overrides by id). */
  ids: RowIds;
  /**
   * Names the object the edit is about (`["tiers", 2]`): issues found inside it are reported
   * relative to it to the form that edited it (ServiceError.scope).
   */
  focus(path: (string | number)[]): void;
}

/** Turns the draft into the desired one (it may change its argument), or null to change nothing. */
export type DraftEdit = (draft: Draft, context: EditContext) => Draft | null;

export interface EditResult {
  plan: PolicyPlan;
  dryRun: boolean;
  /** False when nothing was written (an empty plan, a dry run, an edit that returned null). */
  applied: boolean;
  /** Keys created with a generated secret: the plaintext, shown once, here. */
  generatedKeys: { tenant: string; name: string; key: string }[];
  /** The id of every row of the draft after the edit, by entity and natural key. */
  ids: RowIds;
}

export interface EditOptions {
  /** Plan only: nothing is written (and no role is needed beyond reading). */
  dryRun?: boolean;
  /** When a revocation takes effect; defaults to now. */
  nowMs?: number;
  /** Runs in the transaction after the rows are written; a throw rolls the whole edit back. */
  afterWrite?: (tx: Tx, result: EditResult) => Promise<void>;
  /**
   * Runs in the transaction under the lock, before the edit reads the draft: what the edit needs
   * from the database besides the draft (the live version, for a reset), read consistently.
   */
  beforeEdit?: (tx: Tx) => Promise<void>;
  /**
   * False skips the per-field role check: only for the reset that makes the draft equal to the
   * version a rollback just made live (whoever may roll back made those values live already).
   */
  fieldCheck?: boolean;
}

const TRANSACTION = { maxWait: 10_000, timeout: 120_000 };

export async function editPolicy(db: PrismaClient, edit: DraftEdit, editor: Editor, options: EditOptions = {}): Promise<EditResult> {
  const run = (tx: Tx) => editPolicyIn(tx, edit, editor, options);
  return options.dryRun ? run(db as unknown as Tx) : db.$transaction(run, TRANSACTION);
}

/**
 * editPolicy inside the caller's transaction (rollback resets the draft in its own). Takes the
 * policy lock (a transaction-scoped advisory lock: taking it again in the same transaction is a
 * no-op) unless it is a dry run.
 */
export async function editPolicyIn(tx: Tx, edit: DraftEdit, editor: Editor, options: EditOptions = {}): Promise<EditResult> {
  const dryRun = options.dryRun ?? false;
  if (!dryRun) await lockPolicy(tx);
  await options.beforeEdit?.(tx);
  const { draft: current, ids } = draftFromRows(await loadPolicyRows(tx));
  const warnings: string[] = [];
  let scope: string | null = null;
  const next = edit(structuredClone(current), { warn: (m) => warnings.push(m), ids, focus: (path) => void (scope = formatPath(path)) });
  const nothing: EditResult = { plan: { created: [], changed: [], deleted: [], warnings }, dryRun, applied: false, generatedKeys: [], ids };
  if (next === null) return nothing;

  const checked = validatePolicySpec(next.spec);
  if (!checked.ok) throw invalidPolicy(checked.issues, { scope });
  const desired: Draft = { spec: checked.value, keys: next.keys };
  const plan = planPolicy(current, desired);
  plan.warnings.push(...warnings);
  if (dryRun || planIsEmpty(plan)) return { ...nothing, plan };

  const denied = options.fieldCheck === false ? [] : deniedChanges(editor.role, plan);
  if (denied.length > 0) {
    const first = denied[0];
    const more = denied.length > 1 ? ` (and ${denied.length - 1} more)` : "";
    throw new ServiceError("forbidden", `${first.field}: ${first.message}${more}`, { field: first.field });
  }

  const generatedKeys: EditResult["generatedKeys"] = [];
  const keySecrets = new Map<string, { hash: string; prefix: string }>();
  for (const k of desired.keys) {
    const id = `${k.tenant}/${k.name}`;
    if (k.hash === null) {
      const key = generateSecret("sk_live");
      generatedKeys.push({ tenant: k.tenant, name: k.name, key });
      keySecrets.set(id, { hash: hashSecret(key), prefix: displayPrefix(key) });
    } else if (k.prefix !== null) keySecrets.set(id, { hash: k.hash, prefix: k.prefix });
  }
  const written = await writePlan(tx, plan, { actor: editor.actor, nowMs: options.nowMs ?? Date.now(), ids, keySecrets });
  const result: EditResult = { plan, dryRun, applied: true, generatedKeys, ids: written };
  await options.afterWrite?.(tx, result);
  return result;
}

/** The tenant `slug` of a draft, or not_found (404) naming the field `tenant`. */
export function tenantIn(draft: Draft, slug: string): Draft["spec"]["tenants"][number] {
  const tenant = draft.spec.tenants.find((t) => t.slug === slug);
  if (!tenant) throw new ServiceError("not_found", `no tenant ${JSON.stringify(slug)}`, { field: "tenant" });
  return tenant;
}

/** Parses one part of a policy (a tier, an operation, an override) with its file schema, or invalid_policy. */
export function parsePart<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalidPolicy(issuesFromZod(parsed.error));
  return parsed.data;
}

/**
 * Creates (`originalName` null) or replaces (and maybe renames) the item `originalName` of a list
 * of named items, keeping names unique. Returns the item's index.
 */
export function putNamed<T extends { name: string }>(list: T[], originalName: string | null, item: T, what: string): number {
  const index = list.findIndex((t) => t.name === (originalName ?? item.name));
  const taken = () => new ServiceError("invalid_request", `a${/^[aeiou]/.test(what) ? "n" : ""} ${what} named ${item.name} already exists`, { field: "name" });
  if (originalName === null && index !== -1) throw taken();
  if (originalName !== null && index === -1) throw new ServiceError("not_found", `${what} ${originalName} no longer exists`, { field: "name" });
  if (originalName !== null && originalName !== item.name && list.some((t) => t.name === item.name)) throw taken();
  if (index === -1) return list.push(item) - 1;
  list[index] = item;
  return index;
}
