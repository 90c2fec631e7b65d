-- The policy file's `rateLimitService` section (lib/policy/envoy/schema.ts): one row per Envoy
-- domain holding its envoyproxy/ratelimit config document, and the section's settings in the
-- settings row (null: the defaults).

-- AlterTable
ALTER TABLE "PolicySettings" ADD COLUMN "rateLimitService" JSONB;

-- CreateTable
CREATE TABLE "EnvoyDomain" (
    "id" TEXT NOT NULL,
    "domain" TEXT NOT NULL,
    "document" JSONB NOT NULL,
    "position" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "EnvoyDomain_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "EnvoyDomain_domain_key" ON "EnvoyDomain"("domain");
