-- A key's own page (issue #29): a key may expire (the worker revokes it at that time), and a key
-- issued by a rotation names the key it replaces.

-- AlterTable
ALTER TABLE "ApiKey" ADD COLUMN "expiresAt" TIMESTAMP(3);
ALTER TABLE "ApiKey" ADD COLUMN "rotatedFromId" TEXT;

-- CreateIndex
CREATE INDEX "ApiKey_expiresAt_idx" ON "ApiKey"("expiresAt");
