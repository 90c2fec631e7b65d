/**
 * The decision server process (`npm run decision`): reads the environment, starts the server
 * (worker/decision/server.ts wires the backend, the engine and the HTTP adapter), and handles the
 * process's life: SIGTERM/SIGINT stop accepting, drain in-flight requests, flush usage and exit;
 * a closed output pipe does the same. With SLUICE_DECISION_PROCESSES above 1 (the default is the
 * machine's cores) this process is the supervisor of that many decision processes sharing the
 * ports, and each of them runs the rest of this file (worker/decision/supervisor.ts).
 *
 * The parts, in the order a decision passes them:
 * - worker/decision/http.ts — the HTTP adapter (docs/decision-api.md: /v1/check, /v1/forward-auth,
 *   /v1/release, /healthz, /readyz, /metrics), service tokens in worker/decision/service-tokens.ts;
 * - lib/decision/engine.ts — the decision, without HTTP;
 * - worker/decision/redis-backend.ts or single-node-backend.ts — where policy, keys, counters and
 *   usage live (SLUICE_MODE, docs/architecture.md "Modes");
 * - worker/decision/server.ts — the wiring.
 */
import cluster from "node:cluster";
import { availableParallelism } from "node:os";
import { pathToFileURL } from "node:url";
import { decisionGrpcLimits, decisionHttpSettings, env } from "../lib/env";
import { parseTrustedProxies } from "../lib/decision/client-address";
import { createLogger, errorMessage } from "../lib/log";
import { MAX_BATCH } from "../lib/decision/request";
import { checkSingleNodeEnv, SingleNodeConfigError } from "../lib/single-node/config";
import { startDecisionServer } from "./decision/server";
import { joinCluster, superviseDecisionProcesses, type ClusterMember } from "./decision/supervisor";

export { startDecisionServer, type DecisionServer, type DecisionServerOptions } from "./decision/server";

const baseLogger = createLogger("decision");

/** SLUICE_DECISION_PROCESSES, or its default: the machine's cores, one in single-node mode (its counters live in the process). */
export function decisionProcesses(e: Pick<ReturnType<typeof env>, "SLUICE_DECISION_PROCESSES" | "SLUICE_MODE">): number {
  if (e.SLUICE_MODE === "single-node") {
    if ((e.SLUICE_DECISION_PROCESSES ?? 1) > 1) {
      throw new Error("SLUICE_DECISION_PROCESSES: single-node mode keeps its counters in one process; set 1 or leave it unset");
    }
    return 1;
  }
  return e.SLUICE_DECISION_PROCESSES ?? availableParallelism();
}

/** `npm run decision`. */
async function main(): Promise<void> {
  const e = env();
  const processes = decisionProcesses(e);
  if (processes > 1 && cluster.isPrimary) {
    superviseDecisionProcesses({ processes, logger: baseLogger.child({ role: "supervisor" }) });
    return;
  }
  const supervised = cluster.isWorker;
  const logger = supervised ? baseLogger.child({ process: e.SLUICE_DECISION_PROCESS_INDEX ?? 0 }) : baseLogger;
  let member: ClusterMember | null = null;
  const singleNode = e.SLUICE_MODE === "single-node";
  if (singleNode) {
    const { problems, warnings } = checkSingleNodeEnv(e);
    if (problems.length > 0) throw new SingleNodeConfigError(problems);
    for (const warning of warnings) logger.warn(warning);
  }
  const server = await startDecisionServer({
    port: e.DECISION_PORT,
    host: e.DECISION_HOST,
    region: e.SLUICE_REGION,
    replicationUrl: e.SLUICE_REPLICATION_URL,
    replicationSilentMs: e.SLUICE_REPLICATION_SILENT_MS,
    grpcPort: e.SLUICE_GRPC_PORT,
    rlsDomain: e.SLUICE_RLS_DOMAIN,
    rlsDescriptorTokens: e.SLUICE_RLS_DESCRIPTOR_TOKENS === "1",
    grpcLimits: decisionGrpcLimits(e),
    mode: e.SLUICE_MODE,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL ?? "redis://127.0.0.1:6379",
    clusterNodes: e.REDIS_CLUSTER_NODES,
    redisTimeoutMs: e.REDIS_TIMEOUT_MS,
    pollMs: e.POLICY_POLL_MS,
    // Failure mode `local`: every process enforces its own share.
    instances: e.SLUICE_INSTANCES * processes,
    serviceTokens: (e.SLUICE_SERVICE_TOKENS ?? "").split(","),
    denyCache: e.SLUICE_DENY_CACHE === "1",
    accuracySample: e.SLUICE_ACCURACY_SAMPLE,
    logger,
    denialLogMs: e.SLUICE_DENIAL_LOG_MS,
    httpServer: decisionHttpSettings(e).server,
    httpLimits: decisionHttpSettings(e).limits,
    clientAddressRules: {
      header: e.SLUICE_CLIENT_ADDRESS_HEADER,
      trustedHops: e.SLUICE_TRUSTED_PROXY_HOPS,
      trustedProxies: parseTrustedProxies(e.SLUICE_TRUSTED_PROXIES),
    },
    // One of several processes: /metrics answers for all of them (the supervisor aggregates).
    joinMetrics: supervised
      ? (registry) => {
          const m = joinCluster(registry, logger);
          member = m;
          return () => m.metricsText();
        }
      : undefined,
  });
  const regionNote = e.SLUICE_REGION ? `region ${e.SLUICE_REGION}; ` : "";
  const modeNote = singleNode ? "single-node: no Redis, in-process counters, one replica only; " : "";
  const grpcNote = server.grpcPort === null ? "" : `, Envoy rate limit service (gRPC) on :${server.grpcPort}`;
  // The HTTP server is named in the line (SLUICE_HTTP_SERVER), so a run on the fallback is never mistaken for the default.
  const httpNote = server.httpServer === "node" ? "HTTP on node:http (SLUICE_HTTP_SERVER=node)" : "HTTP on http1 (lib/net/http1.ts)";
  logger.info(
    { port: server.port, grpcPort: server.grpcPort, httpServer: server.httpServer, mode: e.SLUICE_MODE, region: e.SLUICE_REGION ?? null, policyVersion: server.policy.current?.version ?? null },
    `decision server listening on :${server.port}${grpcNote} (${httpNote}; ${regionNote}${modeNote}policy v${server.policy.current?.version ?? "none"}, max batch ${MAX_BATCH}${supervised ? `, process ${e.SLUICE_DECISION_PROCESS_INDEX} of ${processes}` : ""})`,
  );
  (member as ClusterMember | null)?.ready();
  let outputLost = false;
  const stop = (signal: string) => {
    if (!outputLost) logger.info({ signal }, `${signal}: draining`);
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  // Whoever read our output is gone (a supervisor killed without its children, a closed pipe):
  // nothing can be logged any more, so drain and exit. Without this, the failed write of the next
  // log line was itself logged as uncaught, failed again, and the process spun at full CPU forever.
  const onOutputError = (error: NodeJS.ErrnoException) => {
    if (outputLost) return;
    outputLost = true;
    if (error.code === "EPIPE" || error.code === "ERR_STREAM_DESTROYED") stop("output closed");
  };
  process.stdout.on("error", onOutputError);
  process.stderr.on("error", onOutputError);
  process.on("uncaughtException", (error) => {
    if (!outputLost) logger.error({ err: error }, `uncaught: ${errorMessage(error)}`);
  });
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  // The supervisor is gone (killed without its children): nobody hands out connections any more.
  if (supervised) process.once("disconnect", () => stop("supervisor gone"));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    baseLogger.fatal(`decision server failed to start: ${errorMessage(error)}`);
    process.exit(1);
  });
}
