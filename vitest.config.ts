import path from "node:path";
import { defineConfig } from "vitest/config";

// `sluice/client` resolves to the SDK's source here (tsconfig paths say the same); the package as
// consumers get it (dist/, built by npm run build:client) is tested by lib/client/package.int.test.ts.
const alias = [
  { find: /^sluice\/client$/, replacement: path.resolve(import.meta.dirname, "lib/client/index.ts") },
  { find: /^sluice\/client\/(.*)$/, replacement: path.resolve(import.meta.dirname, "lib/client/$1.ts") },
  { find: /^@\//, replacement: `${path.resolve(import.meta.dirname)}/` },
];

// Two projects: `unit` (pure, fast, *.test.ts) and `int` (real PostgreSQL and Redis, *.int.test.ts).
// The int project's global setup creates a fresh database and Redis key prefix for this run.
export default defineConfig({
  resolve: { alias },
  test: {
    projects: [
      {
        resolve: { alias },
        test: {
          name: "unit",
          include: ["lib/**/*.test.ts", "worker/**/*.test.ts", "app/**/*.test.ts", "components/**/*.test.ts", "scripts/**/*.test.ts", "deploy/**/*.test.ts"],
          exclude: ["**/*.int.test.ts", "node_modules/**"],
          environment: "node",
        },
      },
      {
        resolve: { alias },
        test: {
          name: "int",
          // graphql 17 has a development build: inlined, graphql-query-complexity gets the same copy
          // as the tests (externalised, Node would load the production one: two graphql modules).
          server: { deps: { inline: ["graphql-query-complexity"] } },
          include: ["lib/**/*.int.test.ts", "worker/**/*.int.test.ts", "app/**/*.int.test.ts", "deploy/**/*.int.test.ts"],
          environment: "node",
          globalSetup: ["./test/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          fileParallelism: true,
          maxWorkers: 2,
        },
      },
    ],
  },
});
