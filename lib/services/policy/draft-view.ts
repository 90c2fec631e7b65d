/**
 * Draft and live side by side, for every page that shows either (docs/architecture.md, "Draft and
 * live"): the draft compiled and the live version (the header badge, the Policy page, the Tenants
 * list and the Overview read them, and count changes with the same diff), and one version with the
 * version before it (what that version changed).
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { findPolicyVersion } from "../../db/policy-repo";
import { readLivePolicyDocument } from "../../db/ui-policy";
import type { CompiledPolicy, CompiledPolicyBody } from "../../policy/compiled";
import { parseCompiledPolicy } from "../../policy/compiled-schema";
import { ServiceError } from "../errors";
import { compileDraft } from "./publish-policy";

export interface DraftState {
  live: CompiledPolicy | null;
  /** null when the draft does not compile (issues says why). */
  draft: CompiledPolicyBody | null;
  issues: { path: string; message: string }[];
}

/** The live version's document, or null before the first publish. */
export async function readLivePolicy(db: PrismaClient): Promise<CompiledPolicy | null> {
  const row = await readLivePolicyDocument(db);
  const parsed = row ? parseCompiledPolicy(row.document) : null;
  return parsed?.ok ? parsed.value : null;
}

export async function readDraftState(db: PrismaClient): Promise<DraftState> {
  let draft: CompiledPolicyBody | null = null;
  let issues: DraftState["issues"] = [];
  try {
    draft = await compileDraft(db);
  } catch (error) {
    if (error instanceof ServiceError) issues = error.issues.length ? error.issues : [{ path: "", message: error.message }];
    else throw error;
  }
  const live = await readLivePolicy(db);
  return { live, draft, issues };
}

/** Version `version` and the version before it (null for v1), to show what it changed; null if there is no such version. */
export async function readVersionPair(
  db: PrismaClient,
  version: number,
): Promise<{ version: CompiledPolicy; previous: CompiledPolicy | null; author: string; note: string | null; rolledBackFrom: number | null } | null> {
  const row = await findPolicyVersion(db, version);
  if (!row) return null;
  const doc = parseCompiledPolicy(row.document);
  if (!doc.ok) return null;
  const prevRow = version > 1 ? await findPolicyVersion(db, version - 1) : null;
  const prev = prevRow ? parseCompiledPolicy(prevRow.document) : null;
  return { version: doc.value, previous: prev?.ok ? prev.value : null, author: row.author, note: row.note, rolledBackFrom: row.rolledBackFrom };
}
