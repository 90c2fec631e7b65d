import "dotenv/config";
import { defineConfig } from "prisma/config";

// Prisma 7 reads no .env by itself; generate needs a URL even though it never connects.
export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  datasource: { url: process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/sluice" },
});
