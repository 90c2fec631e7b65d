/**
 * The billing export use case: `exportBilling(db, { period, format })` renders a month's statement
 * and records the checksum of the bytes with the period (BillingPeriod.checksums[format]). Called by
 * the route handler, the Billing page and `sluice billing export`.
 */
import { z } from "zod";
import type { Db } from "../db/client";
import { listBillingPeriods } from "../db/billing-repo";
import { BILLING_FORMATS, CONTENT_TYPES, renderStatement, sha256Hex, type BillingFormat } from "./billing-format";
import { buildStatement } from "./billing-statement";

export const periodSchema = z
  .string()
  .regex(/^\d{4}-(0[1-9]|1[0-2])$/, "expected a month like 2026-11");
export const billingExportQuerySchema = z.object({
  period: periodSchema,
  format: z.enum(BILLING_FORMATS).default("csv"),
});
export type BillingExportQuery = z.infer<typeof billingExportQuerySchema>;

export interface BillingExport {
  period: string;
  format: BillingFormat;
  status: "provisional" | "final";
  revision: number;
  body: string;
  contentType: string;
  /** sha256 hex of `body` (UTF-8). */
  checksum: string;
  filename: string;
}

const checksumsSchema = z.record(z.string(), z.string()).catch({});

export async function exportBilling(db: Db, query: { period: string; format: BillingFormat }): Promise<BillingExport> {
  const { period, format } = billingExportQuerySchema.parse(query);
  const statement = await buildStatement(db, period);
  const body = renderStatement(statement, format);
  const checksum = sha256Hex(body);
  // Record the checksum with the period (created as open if the month has no row yet).
  await db.$transaction(async (tx) => {
    const row = await tx.billingPeriod.upsert({ where: { period }, create: { period, status: "open" }, update: {} });
    const checksums = checksumsSchema.parse(row.checksums ?? {});
    if (checksums[format] !== checksum) {
      await tx.billingPeriod.update({ where: { period }, data: { checksums: { ...checksums, [format]: checksum } } });
    }
  });
  const ext = format === "csv" ? "csv" : "json";
  return {
    period,
    format,
    status: statement.status,
    revision: statement.revision,
    body,
    contentType: CONTENT_TYPES[format],
    checksum,
    filename: `sluice-billing-${period}${statement.status === "provisional" ? "-provisional" : ""}${format === "cloudevents" ? "-cloudevents" : ""}.${ext}`,
  };
}

export interface BillingPeriodSummary {
  period: string;
  status: "open" | "closed";
  closedAt: string | null;
  revision: number;
  checksums: Record<string, string>;
}

export async function listBilling(db: Db): Promise<BillingPeriodSummary[]> {
  const rows = await listBillingPeriods(db);
  return rows.map((r) => ({
    period: r.period,
    status: r.status === "closed" ? "closed" : "open",
    closedAt: r.closedAt?.toISOString() ?? null,
    revision: r.revision,
    checksums: checksumsSchema.parse(r.checksums ?? {}),
  }));
}
