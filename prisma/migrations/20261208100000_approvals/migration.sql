-- Two-person approval of publishes (docs/control-plane.md#approval): the policy's `approval` block
-- in the settings row, and one row per request for a second person's approval.

-- AlterTable
ALTER TABLE "PolicySettings" ADD COLUMN "approval" JSONB;

-- CreateTable
CREATE TABLE "ApprovalRequest" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "liveVersion" INTEGER NOT NULL,
    "draftChecksum" TEXT NOT NULL,
    "rolloutId" TEXT,
    "step" INTEGER,
    "spec" JSONB,
    "note" TEXT,
    "diff" JSONB NOT NULL,
    "reasons" TEXT[],
    "reachPercent" DOUBLE PRECISION NOT NULL,
    "requestedBy" TEXT NOT NULL,
    "requestedAt" TIMESTAMP(3) NOT NULL,
    "decidedBy" TEXT,
    "decidedAt" TIMESTAMP(3),
    "decisionReason" TEXT,
    "outcome" JSONB,

    CONSTRAINT "ApprovalRequest_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ApprovalRequest_state_requestedAt_idx" ON "ApprovalRequest"("state", "requestedAt");

-- CreateIndex
CREATE INDEX "ApprovalRequest_rolloutId_idx" ON "ApprovalRequest"("rolloutId");

-- At most one request waits at a time: a new one supersedes the pending one (they would be about
-- the same draft, or the same rollout).
CREATE UNIQUE INDEX "ApprovalRequest_one_pending_idx" ON "ApprovalRequest"("state") WHERE "state" = 'pending';
