/**
 * One published version's compiled document, for the use cases that read a version rather than
 * the draft (`sluice nfr`, `sluice certify`, their pages): version N, or the live (latest) one.
 */
import type { Tx } from "../../db/client";
import { findPolicyVersion, latestPolicyVersion } from "../../db/policy-repo";
import type { PrismaClient } from "../../generated/prisma/client";
import type { CompiledPolicy } from "../../policy/compiled";
import { parseCompiledPolicy } from "../../policy/compiled-schema";
import { ServiceError } from "../errors";

/** Version `version`, or the live one when omitted. Throws not_found (none published / no such version). */
export async function readPublishedVersion(db: PrismaClient | Tx, version?: number): Promise<CompiledPolicy> {
  const row = version === undefined ? await latestPolicyVersion(db) : await findPolicyVersion(db, version);
  if (!row) {
    throw new ServiceError("not_found", version === undefined ? "no policy version is published yet (run sluice publish)" : `policy version ${version} does not exist`, {
      field: "version",
    });
  }
  const parsed = parseCompiledPolicy(row.document);
  if (!parsed.ok) throw new ServiceError("conflict", `stored policy v${row.version} does not validate: ${parsed.issues[0]?.path} ${parsed.issues[0]?.message}`);
  return parsed.value;
}
