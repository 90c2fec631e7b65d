-- Replaces the partial and covering indexes of the two previous migrations, which schema.prisma
-- cannot express (the schema drift test requires every index to be declared there), by one plain
-- index that serves tier totals, system rows and one tenant's rows by granularity and time. Reads
-- of every tenant's rows over a range use the primary key with sequential scans disabled for the
-- transaction (lib/db/usage-repo.ts, withRangeScans).

-- DropIndex
DROP INDEX IF EXISTS "UsageRollup_tier_totals_idx";

-- DropIndex
DROP INDEX IF EXISTS "UsageRollup_system_idx";

-- DropIndex
DROP INDEX IF EXISTS "UsageRollup_keys_idx";

-- DropIndex
DROP INDEX IF EXISTS "UsageRollup_tenant_rows_idx";

-- CreateIndex
CREATE INDEX "UsageRollup_tenant_granularity_bucketStart_idx" ON "UsageRollup"("tenant", "granularity", "bucketStart");
