-- The billing export of a tenant on its own billing period (docs/billing-periods.md, "The export of
-- an anchored tenant"): a frozen line and a late adjustment name the tenant period they are of
-- (its counter label; '' for the UTC calendar month, every existing row), and a line keeps that
-- period's dates. A billing change can end one period and start another in the same month, so a
-- tenant may have two lines of one quota: the label joins the line's primary key.

-- AlterTable
ALTER TABLE "BillingLine" ADD COLUMN "periodLabel" TEXT NOT NULL DEFAULT '',
ADD COLUMN "billingPeriod" JSONB;

-- AlterTable
ALTER TABLE "BillingLine" DROP CONSTRAINT "BillingLine_pkey",
ADD CONSTRAINT "BillingLine_pkey" PRIMARY KEY ("period", "tenant", "quotaId", "periodLabel");

-- AlterTable
ALTER TABLE "BillingAdjustment" ADD COLUMN "periodLabel" TEXT NOT NULL DEFAULT '';
