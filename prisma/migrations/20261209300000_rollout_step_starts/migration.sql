-- When each step of a rollout began (docs/control-plane.md#cohort-against-control-charts): index i is
-- the start of step i, one entry per step entered. The Policy page's charts put each minute's
-- tenants in the cohort of the step that ran then. Rows from before it know their current step's
-- start only (stepStartedAt), and the start of the first (createdAt).

-- AlterTable
ALTER TABLE "Rollout" ADD COLUMN "stepStarts" TIMESTAMP(3)[] DEFAULT ARRAY[]::TIMESTAMP(3)[];
