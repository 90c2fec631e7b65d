// ESLint 9 flat config: Next.js rules plus the import flow of the architecture map (docs/architecture.md "Import flow") (eslint-layers.mjs), enforced.
import { defineConfig, globalIgnores } from "eslint/config";
import nextVitals from "eslint-config-next/core-web-vitals";
import nextTs from "eslint-config-next/typescript";
import { importZones } from "./eslint-layers.mjs";

const TESTS = ["**/*.test.ts", "**/*.int.test.ts", "**/*.spec.ts", "e2e/**", "test/**"];

// Test kits live in `testing/` folders beside the code they exercise (lib/<area>/testing/), and the
// run's own setup in test/ (docs/testing.md). Production code is everything else but benchmarks,
// scripts and tool configs, and never imports a test kit.
const PRODUCTION = ["lib/**/*.{ts,tsx,mts,mjs}", "app/**/*.{ts,tsx}", "components/**/*.{ts,tsx}", "worker/**/*.{ts,mts,mjs}", "examples/**/*.{ts,mjs}", "proxy.ts"];
const NOT_PRODUCTION = [...TESTS, "**/testing/**", "lib/generated/**"];

export default defineConfig([
  ...nextVitals,
  ...nextTs,
  globalIgnores([".next/**", "dist/**", "node_modules/**", "lib/generated/**", ".data/**", "coverage/**", "playwright-report/**", "test-results/**", "next-env.d.ts"]),
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  {
    // Tool config files export their object directly, as their tools document.
    files: ["*.config.{js,mjs,ts}"],
    rules: { "import/no-anonymous-default-export": "off" },
  },
  {
    // Settings are read in one place: lib/env.ts parses every variable with zod and names a bad one
    // (docs/configuration.md). Everything else calls env() / currentEnv() / childEnv(). These may
    // touch process.env themselves, and nothing else:
    files: ["**/*.{ts,tsx,mts,cts,js,mjs,cjs}"],
    ignores: [
      "lib/env.ts",
      ...TESTS, // tests set the variables of the code they start (and test/ is the runs' setup)
      "**/testing/**", // test kits (lib/jobs/testing, lib/client/testing, worker/testing): they set up what tests run
      "bench/**", // benchmark scripts: their own knobs, and the environment of the servers they start
      "scripts/**", // npm test's shell-level helpers
      "*.config.{js,mjs,ts}", // next, playwright, vitest, prisma: read by their tools before any Sluice code runs
    ],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector: "MemberExpression[object.name='process'][property.name='env']",
          message: "Read settings through lib/env.ts (env(), currentEnv(), childEnv()): one schema validates every variable.",
        },
        {
          selector: "VariableDeclarator[init.name='process'] > ObjectPattern > Property[key.name='env']",
          message: "Read settings through lib/env.ts (env(), currentEnv(), childEnv()): one schema validates every variable.",
        },
      ],
    },
  },
  {
    // lib/policy is the pure core (no I/O, no clock, no env): it imports only zod and itself.
    files: ["lib/policy/*.ts"],
    ignores: TESTS,
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "^(?!zod$|zod/|\\./|@/lib/policy/)", message: "lib/policy imports only zod and lib/policy (the pure core: docs/architecture.md)." }] },
      ],
    },
  },
  {
    files: ["lib/policy/*/**/*.ts"],
    ignores: TESTS,
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "^(?!zod$|zod/|\\./|\\.\\./(?!\\.\\./)|@/lib/policy/)", message: "lib/policy imports only zod and lib/policy (the pure core: docs/architecture.md)." }] },
      ],
    },
  },
  {
    // UI components get data from pages and server actions, never from the database or Redis.
    files: ["components/**/*.{ts,tsx}"],
    ignores: TESTS,
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [
            { name: "ioredis", message: "components never talk to Redis." },
            { name: "pg", message: "components never talk to PostgreSQL." },
          ],
          patterns: [
            { group: ["@/lib/db", "@/lib/db/*", "**/lib/db", "**/lib/db/*"], message: "components never import lib/db: read data in a page or server action." },
            { group: ["@/lib/redis", "@/lib/redis/*", "**/lib/redis", "**/lib/redis/*"], message: "components never import lib/redis." },
            { group: ["@prisma/*", "@/lib/generated/*"], message: "components never import Prisma." },
          ],
        },
      ],
    },
  },
  {
    // The import flow of the architecture map (docs/architecture.md "Import flow"), on resolved paths (import/no-restricted-paths):
    // each folder of production code imports only the folders LAYERS allows it, and never a test kit.
    files: PRODUCTION,
    ignores: NOT_PRODUCTION,
    rules: { "import/no-restricted-paths": ["error", { basePath: import.meta.dirname, zones: importZones() }] },
  },
  {
    // The SDK (sluice/client) runs in browsers and edge runtimes and ships alone: it imports only
    // itself and, in its adapters, the framework it adapts; no Node built-in, no Node global.
    files: ["lib/client/*.ts"],
    ignores: TESTS,
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^(?!\\./|fastify$|hono$|next/server\\.js$|@grpc/grpc-js$|graphql$|graphql-query-complexity$)",
              message: "lib/client imports only lib/client and the framework an adapter adapts (it ships as sluice/client).",
            },
          ],
        },
      ],
      "no-restricted-globals": ["error", "process", "Buffer", "require", "__dirname", "__filename", "setImmediate", "global"],
    },
  },
]);
