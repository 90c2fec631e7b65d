-- Guarded rollouts (docs/control-plane.md#guarded-rollout): one row per rollout of a draft to a
-- cohort of tenants before everyone.

-- CreateTable
CREATE TABLE "Rollout" (
    "id" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "liveVersion" INTEGER NOT NULL,
    "candidateVersion" INTEGER NOT NULL,
    "candidateChecksum" TEXT NOT NULL,
    "candidate" JSONB NOT NULL,
    "body" JSONB NOT NULL,
    "canaries" TEXT[],
    "steps" JSONB NOT NULL,
    "guardrails" JSONB NOT NULL,
    "step" INTEGER NOT NULL DEFAULT 0,
    "stepStartedAt" TIMESTAMP(3) NOT NULL,
    "reason" TEXT,
    "note" TEXT,
    "author" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "endedAt" TIMESTAMP(3),
    "lastCheck" JSONB,

    CONSTRAINT "Rollout_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Rollout_state_idx" ON "Rollout"("state");

-- CreateIndex
CREATE INDEX "Rollout_createdAt_idx" ON "Rollout"("createdAt");

-- At most one rollout holds the policy (running or paused) at a time: while one does, nothing else
-- publishes, so every active rollout would start from the same live version.
CREATE UNIQUE INDEX "Rollout_one_active_idx" ON "Rollout"("liveVersion") WHERE "state" IN ('running', 'paused');
