-- Quotas that follow each customer's bill (docs/billing-periods.md): a tenant's billing anchor and
-- time zone, quota notification thresholds per tier and tenant, the policy's plan-change rule,
-- tenant-scoped read tokens, webhook endpoints for quota notifications, and one row per
-- notification (its id, a hash of tenant, quota, period, kind, threshold and limit, is the primary
-- key: what makes each one exactly once).

-- AlterEnum
ALTER TYPE "TokenKind" ADD VALUE 'tenant';

-- AlterTable
ALTER TABLE "ApiToken" ADD COLUMN "tenant" TEXT;

-- AlterTable
ALTER TABLE "PolicySettings" ADD COLUMN "planChange" TEXT;

-- AlterTable
ALTER TABLE "Tenant" ADD COLUMN "billingAnchor" TEXT,
ADD COLUMN "billingTimeZone" TEXT,
ADD COLUMN "thresholds" JSONB;

-- AlterTable
ALTER TABLE "Tier" ADD COLUMN "thresholds" JSONB;

-- CreateTable
CREATE TABLE "WebhookEndpoint" (
    "id" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "secret" TEXT NOT NULL,
    "createdBy" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "WebhookEndpoint_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "QuotaNotification" (
    "id" TEXT NOT NULL,
    "tenant" TEXT NOT NULL,
    "quotaId" TEXT NOT NULL,
    "period" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "threshold" INTEGER NOT NULL,
    "used" BIGINT NOT NULL,
    "limit" BIGINT NOT NULL,
    "event" TEXT NOT NULL,
    "endpointId" TEXT,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lastStatus" INTEGER,
    "lastError" TEXT,
    "nextAttemptAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "retryUntil" TIMESTAMP(3) NOT NULL,
    "deliveredAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "QuotaNotification_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "WebhookEndpoint_scope_key" ON "WebhookEndpoint"("scope");

-- CreateIndex
CREATE INDEX "QuotaNotification_status_nextAttemptAt_idx" ON "QuotaNotification"("status", "nextAttemptAt");

-- CreateIndex
CREATE INDEX "QuotaNotification_tenant_createdAt_idx" ON "QuotaNotification"("tenant", "createdAt");
