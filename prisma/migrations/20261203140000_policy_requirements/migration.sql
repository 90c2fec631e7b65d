-- The policy file's optional `requirements` block (what `sluice certify` must prove), stored as
-- written; null when the policy has none (the defaults apply).

-- AlterTable
ALTER TABLE "PolicySettings" ADD COLUMN "requirements" JSONB;
