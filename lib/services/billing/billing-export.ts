/**
 * The billing export use case: `exportBilling(db, { period, format })` renders a month's statement
 * and its checksum. Called by the route handler and `sluice billing export`. It only reads: a GET
 * never writes (the checksums a period keeps are the ones recorded when the worker closed it), and
 * a month before the first usage or after the current one is not_found — never a new period row,
 * which the close job would then close with every month in between.
 */
import { z } from "zod";
import type { Db } from "../../db/client";
import { knownMonths, listBillingPeriods, monthOf } from "../../db/billing-repo";
import { BILLING_FORMATS, CONTENT_TYPES, renderStatement, sha256Hex, type BillingFormat } from "./billing-format";
import { buildStatement } from "./billing-statement";
import { ServiceError } from "../errors";

export const periodSchema = z
  .string()
  .regex(/^\d{4}-(0[1-9]|1[0-2])$/, "expected a month like 2026-11");
export const billingExportQuerySchema = z.object({
  period: periodSchema,
  format: z.enum(BILLING_FORMATS).default("csv"),
  /** One tenant's lines only (its slug); absent: every tenant. */
  tenant: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "expected a tenant slug (lowercase letters, digits, - and _)")
    .optional(),
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

/** The months billing knows: from the first month with quota usage or a period row to the current (UTC) month. */
export interface BillingMonths {
  /** null: no usage yet, so only the current month. */
  first: string | null;
  current: string;
}

export async function billingMonths(db: Db, { nowMs }: { nowMs: number }): Promise<BillingMonths> {
  const current = monthOf(nowMs);
  const first = (await knownMonths(db)).find((m) => m <= current) ?? null;
  return { first, current };
}

/**
 * A month billing can show: not after the current month, not before the first usage. Otherwise a
 * not_found naming the month and the months there are (the page shows the message; the API answers 404).
 */
export async function checkBillingPeriod(db: Db, period: string, { nowMs }: { nowMs: number }): Promise<BillingMonths> {
  const months = await billingMonths(db, { nowMs });
  const range = months.first === null || months.first === months.current ? months.current : `${months.first} to ${months.current}`;
  if (period > months.current) {
    throw new ServiceError("not_found", `billing period ${period} has not started yet (billing periods: ${range})`, { field: "period" });
  }
  if (period < (months.first ?? months.current)) {
    const why = months.first === null ? "there is no usage yet" : `the first usage is in ${months.first}`;
    throw new ServiceError("not_found", `billing period ${period} is before any usage (${why}; billing periods: ${range})`, { field: "period" });
  }
  return months;
}

export async function exportBilling(
  db: Db,
  query: { period: string; format: BillingFormat; tenant?: string },
  { nowMs = Date.now() }: { nowMs?: number } = {},
): Promise<BillingExport> {
  const { period, format, tenant } = billingExportQuerySchema.parse(query);
  await checkBillingPeriod(db, period, { nowMs });
  const whole = await buildStatement(db, period);
  const statement = tenant === undefined ? whole : { ...whole, lines: whole.lines.filter((l) => l.tenant === tenant), adjustments: whole.adjustments.filter((a) => a.tenant === tenant) };
  if (tenant !== undefined && statement.lines.length === 0 && statement.adjustments.length === 0) {
    throw new ServiceError("not_found", `tenant ${tenant} has no billing lines in ${period}`, { field: "tenant" });
  }
  const body = renderStatement(statement, format);
  const checksum = sha256Hex(body);
  const ext = format === "csv" ? "csv" : "json";
  return {
    period,
    format,
    status: statement.status,
    revision: statement.revision,
    body,
    contentType: CONTENT_TYPES[format],
    checksum,
    filename: `sluice-billing-${period}${tenant === undefined ? "" : `-${tenant}`}${statement.status === "provisional" ? "-provisional" : ""}${format === "cloudevents" ? "-cloudevents" : ""}.${ext}`,
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
