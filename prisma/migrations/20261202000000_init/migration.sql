-- CreateEnum
CREATE TYPE "Role" AS ENUM ('admin', 'product', 'sre', 'billing');

-- CreateEnum
CREATE TYPE "TokenKind" AS ENUM ('service', 'admin');

-- CreateEnum
CREATE TYPE "TenantStatus" AS ENUM ('active', 'suspended');

-- CreateTable
CREATE TABLE "User" (
    "id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "name" TEXT,
    "passwordHash" TEXT NOT NULL,
    "role" "Role" NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "disabledAt" TIMESTAMP(3),

    CONSTRAINT "User_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "LoginAttempt" (
    "id" BIGSERIAL NOT NULL,
    "email" TEXT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "succeeded" BOOLEAN NOT NULL,

    CONSTRAINT "LoginAttempt_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ApiToken" (
    "id" TEXT NOT NULL,
    "kind" "TokenKind" NOT NULL,
    "name" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "role" "Role" NOT NULL DEFAULT 'admin',
    "createdBy" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastUsedAt" TIMESTAMP(3),
    "revokedAt" TIMESTAMP(3),

    CONSTRAINT "ApiToken_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PolicySettings" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "defaultFailureMode" TEXT NOT NULL DEFAULT 'open',

    CONSTRAINT "PolicySettings_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Operation" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "match" TEXT[],
    "cost" INTEGER NOT NULL DEFAULT 1,
    "failureMode" TEXT,
    "position" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "Operation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Tier" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "weight" INTEGER NOT NULL DEFAULT 1,
    "position" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "Tier_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Limit" (
    "id" TEXT NOT NULL,
    "tierId" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "algorithm" TEXT NOT NULL,
    "limit" INTEGER NOT NULL,
    "windowMs" INTEGER,
    "burst" INTEGER,
    "precision" INTEGER,
    "mode" TEXT NOT NULL DEFAULT 'reject',
    "maxDelayMs" INTEGER,
    "leaseTtlMs" INTEGER,
    "position" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "Limit_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Quota" (
    "id" TEXT NOT NULL,
    "tierId" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "period" TEXT NOT NULL,
    "limit" BIGINT NOT NULL,
    "overage" TEXT NOT NULL DEFAULT 'block',
    "position" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "Quota_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "GlobalCap" (
    "id" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "limit" INTEGER NOT NULL,
    "windowMs" INTEGER NOT NULL,
    "share" TEXT NOT NULL DEFAULT 'none',
    "position" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "GlobalCap_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Tenant" (
    "id" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "tierId" TEXT NOT NULL,
    "status" "TenantStatus" NOT NULL DEFAULT 'active',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Tenant_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TenantOverride" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "scope" TEXT,
    "period" TEXT,
    "limit" BIGINT NOT NULL,
    "algorithm" TEXT,
    "windowMs" INTEGER,
    "burst" INTEGER,
    "overage" TEXT,
    "expiresAt" TIMESTAMP(3),
    "position" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "TenantOverride_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ApiKey" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revokedAt" TIMESTAMP(3),

    CONSTRAINT "ApiKey_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PolicyVersion" (
    "version" INTEGER NOT NULL,
    "document" JSONB NOT NULL,
    "checksum" TEXT NOT NULL,
    "author" TEXT NOT NULL,
    "note" TEXT,
    "rolledBackFrom" INTEGER,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "PolicyVersion_pkey" PRIMARY KEY ("version")
);

-- CreateTable
CREATE TABLE "AuditEntry" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "entity" TEXT NOT NULL,
    "entityId" TEXT,
    "before" JSONB,
    "after" JSONB,

    CONSTRAINT "AuditEntry_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "UsageRollup" (
    "bucketStart" TIMESTAMP(3) NOT NULL,
    "granularity" TEXT NOT NULL,
    "tenant" TEXT NOT NULL,
    "tier" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "keyPrefix" TEXT NOT NULL DEFAULT '',
    "count" BIGINT NOT NULL,

    CONSTRAINT "UsageRollup_pkey" PRIMARY KEY ("granularity","bucketStart","tenant","operation","outcome","keyPrefix")
);

-- CreateTable
CREATE TABLE "QuotaUsage" (
    "tenant" TEXT NOT NULL,
    "quotaId" TEXT NOT NULL,
    "period" TEXT NOT NULL,
    "used" BIGINT NOT NULL,
    "denied" BIGINT NOT NULL DEFAULT 0,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "QuotaUsage_pkey" PRIMARY KEY ("tenant","quotaId","period")
);

-- CreateTable
CREATE TABLE "RollupCursor" (
    "sliceKey" TEXT NOT NULL,
    "drainedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RollupCursor_pkey" PRIMARY KEY ("sliceKey")
);

-- CreateIndex
CREATE UNIQUE INDEX "User_email_key" ON "User"("email");

-- CreateIndex
CREATE INDEX "LoginAttempt_email_at_idx" ON "LoginAttempt"("email", "at");

-- CreateIndex
CREATE UNIQUE INDEX "ApiToken_hash_key" ON "ApiToken"("hash");

-- CreateIndex
CREATE UNIQUE INDEX "Operation_name_key" ON "Operation"("name");

-- CreateIndex
CREATE UNIQUE INDEX "Tier_name_key" ON "Tier"("name");

-- CreateIndex
CREATE UNIQUE INDEX "Limit_tierId_operation_scope_algorithm_key" ON "Limit"("tierId", "operation", "scope", "algorithm");

-- CreateIndex
CREATE UNIQUE INDEX "Quota_tierId_operation_period_key" ON "Quota"("tierId", "operation", "period");

-- CreateIndex
CREATE UNIQUE INDEX "GlobalCap_operation_windowMs_key" ON "GlobalCap"("operation", "windowMs");

-- CreateIndex
CREATE UNIQUE INDEX "Tenant_slug_key" ON "Tenant"("slug");

-- CreateIndex
CREATE INDEX "Tenant_tierId_idx" ON "Tenant"("tierId");

-- CreateIndex
CREATE INDEX "Tenant_status_idx" ON "Tenant"("status");

-- CreateIndex
CREATE INDEX "TenantOverride_tenantId_idx" ON "TenantOverride"("tenantId");

-- CreateIndex
CREATE UNIQUE INDEX "ApiKey_hash_key" ON "ApiKey"("hash");

-- CreateIndex
CREATE INDEX "ApiKey_tenantId_idx" ON "ApiKey"("tenantId");

-- CreateIndex
CREATE UNIQUE INDEX "ApiKey_tenantId_name_key" ON "ApiKey"("tenantId", "name");

-- CreateIndex
CREATE INDEX "AuditEntry_at_idx" ON "AuditEntry"("at");

-- CreateIndex
CREATE INDEX "AuditEntry_actor_at_idx" ON "AuditEntry"("actor", "at");

-- CreateIndex
CREATE INDEX "AuditEntry_entity_at_idx" ON "AuditEntry"("entity", "at");

-- CreateIndex
CREATE INDEX "UsageRollup_tenant_bucketStart_idx" ON "UsageRollup"("tenant", "bucketStart");

-- CreateIndex
CREATE INDEX "UsageRollup_tier_bucketStart_idx" ON "UsageRollup"("tier", "bucketStart");

-- AddForeignKey
ALTER TABLE "Limit" ADD CONSTRAINT "Limit_tierId_fkey" FOREIGN KEY ("tierId") REFERENCES "Tier"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Quota" ADD CONSTRAINT "Quota_tierId_fkey" FOREIGN KEY ("tierId") REFERENCES "Tier"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Tenant" ADD CONSTRAINT "Tenant_tierId_fkey" FOREIGN KEY ("tierId") REFERENCES "Tier"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TenantOverride" ADD CONSTRAINT "TenantOverride_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ApiKey" ADD CONSTRAINT "ApiKey_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;
