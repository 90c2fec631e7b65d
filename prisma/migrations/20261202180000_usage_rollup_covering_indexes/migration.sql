-- Covering partial indexes for the all-tenant reads over a time range (top consumers, the usage
-- API): index-only scans over the rows of one granularity and range, instead of the primary key
-- plus a heap fetch per row. Measured with bench/dashboards.ts (1,000 tenants × 30 days, 6.7 M
-- rows): the all-tenant top-consumer queries went from 460–790 ms to 200–440 ms median.
-- schema.prisma cannot express partial or covering indexes; the schema drift test lists these
-- two with their exact definitions (lib/db/schema-drift.int.test.ts, SQL_ONLY_INDEXES).

-- CreateIndex
CREATE INDEX "UsageRollup_keys_idx" ON "UsageRollup"("granularity", "bucketStart") INCLUDE ("tenant", "keyPrefix", "tier", "outcome", "count") WHERE "keyPrefix" <> '';

-- CreateIndex
CREATE INDEX "UsageRollup_tenant_rows_idx" ON "UsageRollup"("granularity", "bucketStart") INCLUDE ("tenant", "tier", "outcome", "count") WHERE "keyPrefix" = '' AND "tenant" NOT LIKE '*:%';
