-- Several regions (docs/regions.md): each limit and global cap says how it is enforced across
-- regions (`local`, the behaviour before regions, `split` or `shared`), and a region that missed a
-- write of the published state is recorded until the worker has caught it up.

-- AlterTable
ALTER TABLE "Limit" ADD COLUMN "regions" TEXT NOT NULL DEFAULT 'local';

-- AlterTable
ALTER TABLE "GlobalCap" ADD COLUMN "regions" TEXT NOT NULL DEFAULT 'local';

-- CreateTable
CREATE TABLE "RegionBehind" (
    "region" TEXT NOT NULL,
    "since" TIMESTAMP(3) NOT NULL,
    "reason" TEXT NOT NULL,

    CONSTRAINT "RegionBehind_pkey" PRIMARY KEY ("region")
);
