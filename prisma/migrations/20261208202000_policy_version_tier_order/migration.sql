-- The order of the tiers as they were published (issue #29, defect 7): a document is stored as
-- jsonb, which does not keep key order, so a rollback or a discard put back the tiers in the
-- draft's order, and a tier the draft no longer had last. Versions published before this have none.

-- AlterTable
ALTER TABLE "PolicyVersion" ADD COLUMN "tierOrder" TEXT[];
