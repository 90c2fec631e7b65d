-- Editable alert rules (issue #29): per alert kind its threshold, window and webhook; a kind
-- without a row uses the defaults of lib/jobs/alert-rules.ts.

-- CreateTable
CREATE TABLE "AlertRule" (
    "kind" TEXT NOT NULL,
    "threshold" DOUBLE PRECISION NOT NULL,
    "windowMinutes" INTEGER NOT NULL,
    "webhookUrl" TEXT,
    "updatedBy" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "AlertRule_pkey" PRIMARY KEY ("kind")
);
