-- Billing periods, their frozen lines and late-usage adjustments; alert events.

-- CreateTable
CREATE TABLE "BillingPeriod" (
    "period" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'open',
    "closedAt" TIMESTAMP(3),
    "revision" INTEGER NOT NULL DEFAULT 0,
    "checksums" JSONB,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "BillingPeriod_pkey" PRIMARY KEY ("period")
);

-- CreateTable
CREATE TABLE "BillingLine" (
    "period" TEXT NOT NULL,
    "tenant" TEXT NOT NULL,
    "quotaId" TEXT NOT NULL,
    "tenantName" TEXT NOT NULL,
    "tier" TEXT NOT NULL,
    "tierHistory" JSONB NOT NULL,
    "operation" TEXT NOT NULL,
    "quotaPeriod" TEXT NOT NULL,
    "limit" BIGINT NOT NULL,
    "overage" TEXT NOT NULL,
    "used" BIGINT NOT NULL,
    "overageUnits" BIGINT NOT NULL,
    "denied" BIGINT NOT NULL,

    CONSTRAINT "BillingLine_pkey" PRIMARY KEY ("period","tenant","quotaId")
);

-- CreateTable
CREATE TABLE "BillingAdjustment" (
    "id" BIGSERIAL NOT NULL,
    "period" TEXT NOT NULL,
    "tenant" TEXT NOT NULL,
    "quotaId" TEXT NOT NULL,
    "used" BIGINT NOT NULL,
    "denied" BIGINT NOT NULL,
    "revision" INTEGER NOT NULL,
    "sliceKey" TEXT NOT NULL,
    "recordedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "BillingAdjustment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AlertEvent" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "startedAt" TIMESTAMP(3) NOT NULL,
    "lastSeenAt" TIMESTAMP(3) NOT NULL,
    "resolvedAt" TIMESTAMP(3),
    "value" DOUBLE PRECISION NOT NULL,
    "threshold" DOUBLE PRECISION NOT NULL,
    "policyVersion" INTEGER,
    "message" TEXT NOT NULL,
    "webhookStatus" TEXT,

    CONSTRAINT "AlertEvent_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "BillingAdjustment_period_idx" ON "BillingAdjustment"("period");

-- CreateIndex
CREATE INDEX "AlertEvent_startedAt_idx" ON "AlertEvent"("startedAt");

-- CreateIndex
CREATE UNIQUE INDEX "AlertEvent_kind_subject_startedAt_key" ON "AlertEvent"("kind", "subject", "startedAt");
