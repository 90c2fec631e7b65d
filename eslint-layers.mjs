// The import flow of the architecture map (docs/architecture.md "Import flow"), as data (eslint.config.mjs enforces it with
// import/no-restricted-paths; lib/architecture-map.test.ts keeps docs/architecture.md's table equal to LAYERS).

// What each folder of production code may import, besides itself and npm packages. Anything not
// listed is refused. This is the map of docs/architecture.md "Import flow".
export const LAYERS = {
  "lib/policy": [], // the pure core (and of packages only zod: its own rule in eslint.config.mjs)
  "lib/net": [],
  "lib/client": [], // sluice/client ships alone (its own rule in eslint.config.mjs)
  "lib/errors.ts": ["lib/policy"],
  "lib/env.ts": ["lib/policy", "lib/decision/client-address.ts"],
  "lib/log.ts": ["lib/env.ts"],
  "lib/store": ["lib/policy", "lib/net", "lib/redis"],
  "lib/redis": ["lib/policy", "lib/env.ts", "lib/net", "lib/decision/ports.ts"],
  "lib/decision": ["lib/policy", "lib/store", "lib/net", "lib/env.ts"],
  // The engine's files that other layers import are layers of their own, below them (no cycle):
  "lib/decision/ports.ts": ["lib/policy"], // the ports the adapters in lib/redis implement
  "lib/decision/client-address.ts": ["lib/policy"], // read by lib/env.ts and lib/auth
  "lib/decision/process-flags.ts": [], // the decision processes' Node flags, for lib/processes
  "lib/envoy": ["lib/policy", "lib/store", "lib/redis", "lib/net", "lib/decision"],
  "lib/regions": ["lib/policy", "lib/store", "lib/redis"],
  "lib/processes": ["lib/env.ts", "lib/net", "lib/decision/process-flags.ts"],
  "lib/db": ["lib/policy", "lib/env.ts", "lib/net", "lib/generated"],
  "lib/rls": ["lib/policy", "lib/decision", "lib/envoy"],
  "lib/single-node": ["lib/policy", "lib/env.ts", "lib/store", "lib/redis", "lib/decision", "lib/db", "lib/jobs", "lib/net"],
  "lib/services": ["lib/policy", "lib/errors.ts", "lib/env.ts", "lib/net", "lib/store", "lib/redis", "lib/decision", "lib/processes", "lib/db", "lib/generated", "lib/auth"],
  "lib/jobs": ["lib/policy", "lib/env.ts", "lib/redis", "lib/db", "lib/generated", "lib/services"],
  "lib/auth": ["lib/policy", "lib/errors.ts", "lib/env.ts", "lib/decision/client-address.ts", "lib/db", "lib/generated"],
  "lib/http": ["lib/policy", "lib/errors.ts", "lib/env.ts", "lib/redis", "lib/db", "lib/generated", "lib/auth"],
  "lib/openapi": ["lib/policy", "lib/errors.ts", "lib/decision", "lib/services"],
  app: ["lib/policy", "lib/errors.ts", "lib/env.ts", "lib/log.ts", "lib/db", "lib/generated", "lib/auth", "lib/http", "lib/services", "lib/openapi", "components"],
  // client components: the pure core, the engine's pure planning for the simulator, the in-process
  // store and the role checks (pure); server actions come in as props from their pages (no cycle with app)
  components: ["lib/policy", "lib/errors.ts", "lib/decision/decide.ts", "lib/decision/checks.ts", "lib/decision/answer.ts", "lib/decision/accuracy.ts", "lib/store/memory.ts", "lib/store/types.ts", "lib/store/lua/wire.ts", "lib/store/lease-id.ts", "lib/store/reservation.ts", "lib/auth/require-role.ts", "lib/auth/permissions.ts"],
  worker: ["lib"],
  "proxy.ts": ["lib/auth"],
  examples: ["lib/client"], // what a user copies: the SDK only
};
const AREAS = ["lib/policy", "lib/net", "lib/client", "lib/errors.ts", "lib/env.ts", "lib/log.ts", "lib/store", "lib/redis", "lib/decision", "lib/envoy", "lib/regions", "lib/processes", "lib/db", "lib/generated", "lib/rls", "lib/single-node", "lib/services", "lib/jobs", "lib/auth", "lib/http", "lib/openapi", "app", "components", "worker", "examples", "proxy.ts"];

export function importZones() {
  const inside = (file, dir) => file === dir || file.startsWith(`${dir}/`);
  const zones = [];
  for (const [target, allowed] of Object.entries(LAYERS)) {
    for (const area of AREAS) {
      // A file with a row of its own imports nothing of its folder either (but what its row allows).
      if (inside(target, area) && target !== area && target.endsWith(".ts")) {
        zones.push({ target: `./${target}`, from: `./${area}`, except: [`./${target.slice(area.length + 1)}`], message: `${target} imports nothing of ${area}: it is a layer of its own (LAYERS in eslint-layers.mjs).` });
        continue;
      }
      if (inside(target, area) || inside(area, target)) continue;
      const except = allowed.filter((a) => inside(a, area) && a !== area).map((a) => `./${a.slice(area.length + 1)}`);
      if (allowed.some((a) => inside(area, a))) continue;
      zones.push({
        target: `./${target}`,
        from: `./${area}`,
        ...(except.length > 0 ? { except } : {}),
        message: `${target} does not import ${area}${except.length > 0 ? ` (but ${except.join(", ")})` : ""}: the import flow in the architecture map (docs/architecture.md "Import flow") (LAYERS in eslint-layers.mjs).`,
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
