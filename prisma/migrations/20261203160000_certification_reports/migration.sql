-- `sluice certify` reports, attached to the policy version they certified (no foreign key: a
-- version row is never deleted, and a report must not block anything).

-- CreateTable
CREATE TABLE "CertificationReport" (
    "id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "passed" BOOLEAN NOT NULL,
    "mode" TEXT NOT NULL,
    "target" TEXT,
    "instances" INTEGER NOT NULL,
    "report" JSONB NOT NULL,
    "html" TEXT NOT NULL,

    CONSTRAINT "CertificationReport_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "CertificationReport_version_createdAt_idx" ON "CertificationReport"("version", "createdAt");
