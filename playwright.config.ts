/**
 * Browser tests against a production build (`next start`) on a free port, with a database of its
 * own: the name and port are chosen once here (workers inherit them through the environment),
 * the server only touches the database after e2e/global-setup.ts has created, migrated and seeded
 * it (Playwright starts webServer before globalSetup), and global-teardown drops it.
 * Chromium is Debian's (`apt-get install chromium`): `npx playwright install` cannot download here.
 * SLUICE_E2E_SKIP_BUILD=1 reuses an existing .next build.
 */
import { randomBytes } from "node:crypto";
import { defineConfig } from "@playwright/test";

if (!process.env.SLUICE_E2E_PORT) {
  process.env.SLUICE_E2E_PORT = String(40_000 + Math.floor(Math.random() * 9_000));
  process.env.SLUICE_E2E_DB = `sluice_test_${Date.now()}_${randomBytes(4).toString("hex")}`;
  process.env.SLUICE_E2E_REDIS_PREFIX = `e2e${randomBytes(3).toString("hex")}:`;
}
const port = Number(process.env.SLUICE_E2E_PORT);
const baseDatabaseUrl = process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/test";
const databaseUrl = (() => {
  const u = new URL(baseDatabaseUrl);
  u.pathname = `/${process.env.SLUICE_E2E_DB}`;
  return u.toString();
})();
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
export const E2E = { port, databaseUrl, baseDatabaseUrl, redisUrl, redisPrefix: process.env.SLUICE_E2E_REDIS_PREFIX ?? "e2e:" };
const baseURL = `http://127.0.0.1:${port}`;

export default defineConfig({
  testDir: "./e2e",
  // Per run: Playwright empties its output directory first, and other runs may be going on.
  outputDir: `./test-results/${process.env.SLUICE_E2E_DB}`,
  globalSetup: "./e2e/global-setup.ts",
  globalTeardown: "./e2e/global-teardown.ts",
  fullyParallel: false,
  workers: 1,
  timeout: 120_000,
  expect: { timeout: 15_000 },
  retries: 0,
  reporter: [["list"]],
  use: {
    baseURL,
    viewport: { width: 1280, height: 900 },
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
      ],
    },
  },
  webServer: {
    command: `sh -c '[ "$SLUICE_E2E_SKIP_BUILD" = 1 ] && [ -f .next/BUILD_ID ] || npx next build || exit 1; exec npx next start -p ${port} -H 127.0.0.1'`,
    url: `${baseURL}/login`,
    timeout: 600_000,
    reuseExistingServer: false,
    stdout: "pipe",
    stderr: "pipe",
    env: {
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      SLUICE_REDIS_PREFIX: E2E.redisPrefix,
      NEXTAUTH_URL: baseURL,
      NEXTAUTH_SECRET: "e2e-only-secret-not-for-production-0123456789",
      NEXT_TELEMETRY_DISABLED: "1",
      // The Dashboards page links to it (no decision server runs in e2e; the link is what is checked).
      SLUICE_METRICS_URL: "http://127.0.0.1:8787/metrics",
    },
  },
});
