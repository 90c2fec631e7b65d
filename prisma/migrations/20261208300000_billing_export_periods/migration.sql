-- The billing export of a tenant on its own billing period (docs/billing-periods.md, "The export of
-- an anchored tenant"): a frozen line and a late adjustment name the tenant period they are of
-- (its counter label; '' for the UTC calendar month, every existing row), and a line keeps that
-- period's dates. A billing change can end one period and start another in the same month: the
-- earlier lines of one tenant × quota are then kept under "period" = '<month>|<label>', so the
-- primary key stays (period, tenant, quotaId).

-- AlterTable
ALTER TABLE "BillingLine" ADD COLUMN "periodLabel" TEXT NOT NULL DEFAULT '',
ADD COLUMN "billingPeriod" JSONB;

-- AlterTable
ALTER TABLE "BillingAdjustment" ADD COLUMN "periodLabel" TEXT NOT NULL DEFAULT '';
