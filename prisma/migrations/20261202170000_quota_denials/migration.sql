-- Decisions denied BY a quota (the decision servers' `q|<tenant>|<quotaId>` usage fields), apart
-- from the existing `denied` columns, which count denials for any reason on the operations a quota
-- covers. The billing export's `denied` column shows `quotaDenied`.
--
-- Existing rows: QuotaUsage starts at 0 (the aggregates drained before this migration carry no
-- reason). Frozen billing lines and adjustments get NULL, meaning "not recorded": they keep
-- exporting their old `denied`, so a closed month re-exports the same bytes.

-- AlterTable
ALTER TABLE "QuotaUsage" ADD COLUMN "quotaDenied" BIGINT NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "BillingLine" ADD COLUMN "quotaDenied" BIGINT;

-- AlterTable
ALTER TABLE "BillingAdjustment" ADD COLUMN "quotaDenied" BIGINT;
