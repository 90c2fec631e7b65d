/** `sluice certify` reports, attached to the policy version they certified. */
import type { Db } from "./client";
import type { Prisma } from "../generated/prisma/client";
import { newId } from "./policy-repo";

export interface StoredReportInput {
  version: number;
  passed: boolean;
  mode: string;
  target: string | null;
  instances: number;
  report: Prisma.InputJsonValue;
  html: string;
  createdAt: Date;
}

export async function saveCertificationReport(db: Db, input: StoredReportInput): Promise<string> {
  const id = newId("certificationReport");
  await db.certificationReport.create({ data: { id, ...input } });
  return id;
}

export async function findCertificationReport(db: Db, id: string) {
  return db.certificationReport.findUnique({ where: { id } });
}

/** The latest report of each of these versions, with its results (for the version history). */
export async function latestReportsWithResults(db: Db, versions: readonly number[]) {
  if (versions.length === 0) return [];
  return db.certificationReport.findMany({
    where: { version: { in: [...versions] } },
    orderBy: [{ version: "desc" }, { createdAt: "desc" }],
    distinct: ["version"],
    select: { id: true, version: true, createdAt: true, passed: true, mode: true, target: true, instances: true, report: true },
  });
}
