-- Covering partial indexes for the top-consumer and per-range reads (bench/dashboards.ts): the
-- planner misestimates time ranges (minute rows crowd the recent buckets of the bucketStart
-- histogram) and fell back to sequential scans of the whole table; index-only scans over these
-- keep every dashboard query well under 500 ms at 1,000 tenants × 30 days.

-- DropIndex
DROP INDEX IF EXISTS "UsageRollup_keys_idx";

-- CreateIndex
CREATE INDEX "UsageRollup_keys_idx" ON "UsageRollup"("granularity", "bucketStart") INCLUDE ("tenant", "keyPrefix", "tier", "outcome", "count") WHERE "keyPrefix" <> '';

-- CreateIndex
CREATE INDEX "UsageRollup_tenant_rows_idx" ON "UsageRollup"("granularity", "bucketStart") INCLUDE ("tenant", "tier", "outcome", "count") WHERE "keyPrefix" = '' AND "tenant" NOT LIKE '*:%';
