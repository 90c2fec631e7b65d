-- What the worker's periodic jobs last did (lib/db/job-runs.ts): the Billing page says when the
-- close job last ran (a month past its close that is still open says why) and shows the quota
-- counters that differed from quota usage at the last reconciliation, where billing looks.

-- CreateTable
CREATE TABLE "JobRun" (
    "job" TEXT NOT NULL,
    "lastRunAt" TIMESTAMP(3) NOT NULL,
    "result" JSONB NOT NULL,

    CONSTRAINT "JobRun_pkey" PRIMARY KEY ("job")
);
