// ESLint 9 flat config: Next.js rules plus the import boundaries of STYLE.md, enforced.
import { defineConfig, globalIgnores } from "eslint/config";
import nextVitals from "eslint-config-next/core-web-vitals";
import nextTs from "eslint-config-next/typescript";

const TESTS = ["**/*.test.ts", "**/*.int.test.ts", "**/*.spec.ts", "e2e/**", "test/**"];

// Test kits live in `testing/` folders beside the code they exercise (lib/<area>/testing/), and the
// run's own setup in test/ (docs/testing.md). Production code is everything else but benchmarks,
// scripts and tool configs, and never imports a test kit.
const PRODUCTION = ["lib/**/*.{ts,tsx,mts,mjs}", "app/**/*.{ts,tsx}", "components/**/*.{ts,tsx}", "worker/**/*.{ts,mts,mjs}", "examples/**/*.{ts,mjs}", "proxy.ts"];
const NOT_PRODUCTION = [...TESTS, "**/testing/**", "lib/generated/**"];

// What each folder of production code may import, besides itself and npm packages. Anything not
// listed is refused. This is the map of the README's "Architecture" section.
const LAYERS = {
  "lib/policy": [], // the pure core (and only zod: see its own rule below)
  "lib/net": [],
  "lib/client": [], // sluice/client ships alone (its own rule below)
  "lib/errors.ts": ["lib/policy"],
  "lib/env.ts": ["lib/policy", "lib/decision/client-address.ts"],
  "lib/log.ts": ["lib/env.ts"],
  "lib/store": ["lib/policy", "lib/net", "lib/redis"],
  "lib/redis": ["lib/policy", "lib/env.ts", "lib/decision/ports.ts"],
  "lib/decision": ["lib/policy", "lib/store", "lib/redis", "lib/net", "lib/env.ts"],
  "lib/db": ["lib/policy", "lib/env.ts", "lib/net", "lib/generated"],
  "lib/rls": ["lib/policy", "lib/decision"],
  "lib/single-node": ["lib/policy", "lib/env.ts", "lib/store", "lib/redis", "lib/decision", "lib/db", "lib/jobs", "lib/net"],
  "lib/services": ["lib/policy", "lib/errors.ts", "lib/env.ts", "lib/net", "lib/store", "lib/redis", "lib/decision", "lib/db", "lib/generated", "lib/auth", "lib/jobs"],
  "lib/jobs": ["lib/policy", "lib/env.ts", "lib/redis", "lib/db", "lib/generated", "lib/services"],
  "lib/auth": ["lib/policy", "lib/errors.ts", "lib/env.ts", "lib/decision/client-address.ts", "lib/db", "lib/generated", "lib/services"],
  "lib/http": ["lib/policy", "lib/errors.ts", "lib/env.ts", "lib/redis", "lib/db", "lib/generated", "lib/auth"],
  app: ["lib/policy", "lib/errors.ts", "lib/env.ts", "lib/log.ts", "lib/db", "lib/generated", "lib/auth", "lib/http", "lib/services", "components"],
  // client components: the pure core, the engine's pure planning for the simulator, the in-process
  // store, the role checks (pure), and the server actions they call
  components: ["lib/policy", "lib/errors.ts", "lib/decision/checks.ts", "lib/decision/answer.ts", "lib/decision/accuracy.ts", "lib/store/memory.ts", "lib/store/types.ts", "lib/store/lease-id.ts", "lib/store/reservation.ts", "lib/auth/require-role.ts", "lib/auth/permissions.ts", "app"],
  worker: ["lib"],
  "proxy.ts": ["lib/auth"],
};
const AREAS = ["lib/policy", "lib/net", "lib/client", "lib/errors.ts", "lib/env.ts", "lib/log.ts", "lib/store", "lib/redis", "lib/decision", "lib/db", "lib/generated", "lib/rls", "lib/single-node", "lib/services", "lib/jobs", "lib/auth", "lib/http", "app", "components", "worker"];

function importZones() {
  const inside = (file, dir) => file === dir || file.startsWith(`${dir}/`);
  const zones = [];
  for (const [target, allowed] of Object.entries(LAYERS)) {
    for (const area of AREAS) {
      if (inside(target, area) || inside(area, target)) continue;
      const except = allowed.filter((a) => inside(a, area) && a !== area).map((a) => `./${a.slice(area.length + 1)}`);
      if (allowed.some((a) => inside(area, a))) continue;
      zones.push({
        target: `./${target}`,
        from: `./${area}`,
        ...(except.length > 0 ? { except } : {}),
        message: `${target} does not import ${area}${except.length > 0 ? ` (but ${except.join(", ")})` : ""}: the import flow in the README's architecture map (eslint.config.mjs LAYERS).`,
      });
    }
  }
  zones.push({
    target: "./",
    from: ["./**/testing/**", "./test/**", "./e2e/**", "./bench/**"],
    message: "production code never imports test kits (testing/ folders, test/) or benchmarks: docs/testing.md.",
  });
  zones.push({ target: "./", from: "./node_modules/vitest", message: "production code never imports vitest: docs/testing.md." });
  zones.push({ target: "./", from: "./node_modules/fast-check", message: "production code never imports fast-check: docs/testing.md." });
  return zones;
}

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
    // (README "Configuration"). Everything else calls env() / currentEnv() / childEnv(). These may
    // touch process.env themselves, and nothing else:
    files: ["**/*.{ts,tsx,mts,cts,js,mjs,cjs}"],
    ignores: [
      "lib/env.ts",
      ...TESTS, // tests set the variables of the code they start (and test/ is the runs' setup)
      "lib/**/testing/**", // test kits (lib/jobs/testing, lib/client/testing): they set up what tests run
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
        { patterns: [{ regex: "^(?!zod$|zod/|\\./|@/lib/policy/)", message: "lib/policy imports only zod and lib/policy (STYLE.md: the pure core)." }] },
      ],
    },
  },
  {
    files: ["lib/policy/*/**/*.ts"],
    ignores: TESTS,
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "^(?!zod$|zod/|\\./|\\.\\./(?!\\.\\./)|@/lib/policy/)", message: "lib/policy imports only zod and lib/policy (STYLE.md: the pure core)." }] },
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
    // The import flow of the README's architecture map, on resolved paths (import/no-restricted-paths):
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
