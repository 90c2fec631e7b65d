/**
 * A month's billing statement: its lines and adjustments, as lib/services/billing/billing-statement.ts
 * builds them and every export format renders them (./billing-format.ts, ./billing-meter-formats.ts).
 */
export interface TierSpanOut {
  tier: string;
  from: string;
  to: string;
}

/** The tenant's own billing period a line covers (docs/billing-periods.md, "The export of an anchored tenant"). */
export interface LinePeriod {
  /** The counter label: `2026-11-15@America/Los_Angeles`. */
  label: string;
  timeZone: string;
  /** First and last local day, `YYYY-MM-DD`. */
  start: string;
  end: string;
  /** The period's first instant and its end (exclusive), ISO 8601 UTC. */
  startAt: string;
  endAt: string;
}

export interface StatementLine {
  tenant: string;
  tenantName: string;
  tier: string;
  tierHistory: TierSpanOut[];
  quotaId: string;
  operation: string;
  quotaPeriod: "day" | "month";
  limit: number;
  overage: "block" | "bill";
  used: number;
  overageUnits: number;
  /** Requests denied by this quota (the `denied` column of ./billing-format.ts). */
  denied: number;
  /** The tenant's own override of its tier's quota was in force during the month. */
  tenantOverride: boolean;
  /** Absent for a tenant on the UTC calendar month: the line is the month. */
  billingPeriod?: LinePeriod;
}

export interface StatementAdjustment extends StatementLine {
  revision: number;
}

export interface Statement {
  period: string;
  status: "provisional" | "final";
  /** Number of adjustment batches included (0 until late usage arrives after the close). */
  revision: number;
  lines: StatementLine[];
  adjustments: StatementAdjustment[];
}
