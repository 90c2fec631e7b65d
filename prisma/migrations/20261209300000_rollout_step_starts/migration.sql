-- When each step of a rollout began (docs/control-plane.md#cohort-against-control-charts): index i is
-- the start of step i, one entry per step entered. The Policy page's charts put each minute's
-- tenants in the cohort of the step that ran then. Rows from before it get an empty list: the charts
-- then know the first step's start (createdAt) and the current step's (stepStartedAt) only.

-- AlterTable
ALTER TABLE "Rollout" ADD COLUMN "stepStarts" TIMESTAMP(3)[];
UPDATE "Rollout" SET "stepStarts" = ARRAY[]::TIMESTAMP(3)[];
