-- Partial indexes for the dashboards (bench/dashboards.ts): the pre-aggregated tier totals
-- (tenant `*:<tier>`), the system rows (tenant '': latency histograms, store errors) and the
-- API-key-prefix rows, each read by time range without scanning every tenant's rows.
-- Partial indexes cannot be expressed in schema.prisma; they live only here.

-- CreateIndex
CREATE INDEX "UsageRollup_tier_totals_idx" ON "UsageRollup"("granularity", "bucketStart") WHERE "tenant" LIKE '*:%';

-- CreateIndex
CREATE INDEX "UsageRollup_system_idx" ON "UsageRollup"("granularity", "bucketStart") WHERE "tenant" = '';

-- CreateIndex
CREATE INDEX "UsageRollup_keys_idx" ON "UsageRollup"("granularity", "bucketStart") WHERE "keyPrefix" <> '';
