/**
 * The decision server's wiring: one backend (Redis or single-node), the engine with its breaker,
 * deny cache, metrics and local store, the service tokens, and the protocol adapters in front: HTTP
 * (http.ts) and, on its own port, Envoy's rate limit service over gRPC (grpc.ts). Every protocol
 * adapter calls the same `engine.decide(request) → DecisionAnswer`; closing drains both.
 *
 * Following one decision (docs/architecture.md "One decision"): http.ts parses the request
 * (lib/decision/request.ts) → engine.decide (lib/decision/engine.ts, around the pure core
 * lib/decision/decide.ts: key → tenant → plan → outcome → answer) → the counter store
 * (lib/store/redis/, one DECIDE call per event-loop turn, lib/store/lua/decide.ts) → the answer
 * and its headers (lib/decision/answer.ts) → http.ts writes it.
 */
import { DEFAULT_ACCURACY_SAMPLE } from "../../lib/decision/accuracy";
import { CircuitBreaker } from "../../lib/decision/breaker";
import { DenialLog } from "../../lib/decision/denial-log";
import { DenyCache } from "../../lib/decision/deny-cache";
import { DecisionEngine } from "../../lib/decision/engine";
import { closedWaitMs } from "../../lib/decision/failure-path";
import { redisPrefix } from "../../lib/redis/keys";
import { DecisionMetrics } from "../../lib/decision/metrics";
import type { PolicyPort } from "../../lib/decision/ports";
import type { HttpServerKind } from "../../lib/net/http-server";
import { accuracyTolerances } from "../../lib/policy/requirements";
import { createLogger } from "../../lib/log";
import { createMemoryStore } from "../../lib/store/memory";
import { createMemoryEnvoyCounters } from "../../lib/envoy/memory-store";
import { EnvoyDecider } from "../../lib/envoy/engine";
import { currentEnv } from "../../lib/env";
import type { Backend, BackendContext } from "./backend";
import { createDecisionGrpc } from "./grpc";
import { createDecisionHttp } from "./http";
import { createRlsAnswer } from "./rls-answer";
import type { DecisionServerOptions } from "./options";
import { redisBackend } from "./redis-backend";
import { registerRegionShareMetric } from "./region-metrics";
import { ServiceTokens } from "./service-tokens";
import { singleNodeBackend } from "./single-node-backend";

export type { DecisionServerOptions } from "./options";

export interface DecisionServer {
  port: number;
  /** The gRPC rate limit service's port, null when it is not served. */
  grpcPort: number | null;
  /** The HTTP/1.1 server in use (SLUICE_HTTP_SERVER). */
  httpServer: HttpServerKind;
  engine: DecisionEngine;
  metrics: DecisionMetrics;
  policy: PolicyPort;
  close(): Promise<void>;
}

export async function startDecisionServer(options: DecisionServerOptions): Promise<DecisionServer> {
  const logger = options.logger ?? createLogger("decision");
  const log = (message: string) => logger.warn(message);
  const metrics = new DecisionMetrics();
  // Several regions scrape into one Prometheus: every series says which region it came from.
  if (options.region) metrics.registry.setDefaultLabels({ region: options.region });
  const region: Record<string, string> = options.region ? { region: options.region } : {};
  const readiness = () => {
    const r = backend.readiness();
    return { ready: r.ready, body: { ...region, ...r.body } };
  };
  const breaker = new CircuitBreaker();
  metrics.setBreaker("closed");
  breaker.onChange = (state) => {
    metrics.setBreaker(state);
    if (state === "closed") logger.info({ breaker: state }, `circuit breaker ${state}`);
    else logger.warn({ breaker: state }, `circuit breaker ${state}`);
  };
  // Denials are written once per interval and reason, never per request (lib/decision/denial-log.ts).
  const denials = new DenialLog();
  const writeDenials = () => {
    for (const line of denials.drain()) logger.info({ ...line, intervalMs: denialLogMs }, `${line.count} denied: ${line.reason}`);
  };
  const denialLogMs = options.denialLogMs ?? 10_000;
  const denialTimer = setInterval(writeDenials, denialLogMs);
  denialTimer.unref();
  const denyCache = options.denyCache === false ? null : new DenyCache();
  const tokens = new ServiceTokens(options.serviceTokens);
  const accuracySample = options.accuracySample ?? DEFAULT_ACCURACY_SAMPLE;
  metrics.accuracySampleRatio.set(accuracySample);

  const context: BackendContext = {
    options,
    log,
    logger,
    breaker,
    registry: metrics.registry,
    policyLoaded: (doc) => {
      metrics.policyVersion.set(doc.version);
      metrics.setAccuracyTolerances(accuracyTolerances(doc));
      denyCache?.clear();
      logger.info({ policyVersion: doc.version }, `policy v${doc.version} loaded`);
    },
    sharesChanged: () => denyCache?.clear(),
    serviceTokens: (hashes) => tokens.replacePublished(hashes),
    rolloutLoaded: (split) => {
      metrics.rolloutCandidateVersion.set(split?.candidateVersion ?? 0);
      // A denial cached under one version's limits must not answer for the other's.
      denyCache?.clear();
      if (split) logger.info({ rollout: split.id, step: split.step + 1, candidateVersion: split.candidateVersion, cohort: split.cohortSize }, `rollout ${split.id}: v${split.candidateVersion} for ${split.cohortSize} tenant(s)`);
      else logger.info("no rollout: every tenant on the live version");
    },
  };
  const backend: Backend = (options.mode ?? "redis") === "single-node" ? await singleNodeBackend(context) : redisBackend(context);
  registerRegionShareMetric(metrics.registry, () => backend.policy.current, backend.currentPolicy);

  // Failure mode `local` keeps its counters on the store's clock too (engine.storeNowMs).
  const localStore = createMemoryStore({ clock: () => engine.storeNowMs() });
  const engine: DecisionEngine = new DecisionEngine({
    policy: backend.currentPolicy,
    policyFor: backend.policyFor,
    keyIndex: backend.keyIndex,
    store: backend.store,
    localStore,
    instances: options.instances,
    storeTimeoutMs: options.redisTimeoutMs,
    breaker,
    denyCache,
    usage: backend.usage,
    metrics,
    denials,
    accuracySample,
  });

  // The policy's `rateLimitService` domains: their fixed window in one script, Sluice's algorithms in the same store.
  const envoy = new EnvoyDecider({
    policy: backend.currentPolicy,
    counters: backend.envoyCounters,
    store: backend.store,
    localCounters: createMemoryEnvoyCounters(() => engine.storeNowMs()),
    localStore,
    instances: options.instances,
    storeTimeoutMs: options.redisTimeoutMs,
    breaker,
    keyPrefix: currentEnv("SLUICE_REDIS_PREFIX"),
    storeNowMs: () => engine.storeNowMs(),
    metrics,
    usage: backend.usage,
  });

  const metricsText = options.joinMetrics?.(metrics.registry);
  const http = createDecisionHttp({
    engine,
    tokens,
    currentPolicy: backend.currentPolicy,
    readiness,
    health: region,
    metrics,
    metricsText,
    logger,
    clientAddressRules: options.clientAddressRules,
    httpServer: options.httpServer,
    httpLimits: options.httpLimits,
    rls: createRlsAnswer({ engine, envoy, domain: options.rlsDomain ?? "sluice" }),
    usage: {
      tokens,
      reader: backend.tenantUsage,
      currentPolicy: backend.currentPolicy,
      store: backend.store,
      prefix: redisPrefix(),
      storeNowMs: () => engine.storeNowMs(),
      timeoutMs: closedWaitMs(options.redisTimeoutMs),
    },
  });
  const grpc = options.grpcPort
    ? createDecisionGrpc({
        engine,
        envoy,
        tokens,
        domain: options.rlsDomain ?? "sluice",
        readiness,
        metrics,
        logger,
        limits: options.grpcLimits,
        descriptorTokens: options.rlsDescriptorTokens,
        flushStore: () => backend.store.flush?.(),
      })
    : null;

  await backend.start();
  if (backend.policy.current) {
    metrics.policyVersion.set(backend.policy.current.version);
    metrics.setAccuracyTolerances(accuracyTolerances(backend.policy.current));
  }

  await engine.syncClock();
  // Every second: the usage flush, and one read of the store's clock so an idle server's estimate
  // stays fresh (decisions update it too).
  const usageTimer = setInterval(() => {
    void backend.flushUsage();
    void engine.syncClock();
  }, 1_000);
  usageTimer.unref();
  // Once a minute, off the decision path: "last used" of the service tokens accepted since (the
  // request itself only adds the token's hash to a set; ServiceTokens.takeUsed).
  const recordTokenUse = async () => {
    const used = tokens.takeUsed();
    if (used.length > 0) await backend.recordTokenUse(used, Date.now()).catch((error: unknown) => log(`could not record the service tokens' last use: ${error instanceof Error ? error.message : String(error)}`));
  };
  const tokenUseTimer = setInterval(() => void recordTokenUse(), options.tokenUseFlushMs ?? 60_000);
  tokenUseTimer.unref();

  await new Promise<void>((resolve, reject) => {
    http.server.once("error", reject);
    http.server.listen(options.port, options.host, () => resolve());
  });
  const address = http.server.address();
  const port = typeof address === "object" && address ? address.port : options.port;
  let grpcPort: number | null = null;
  if (grpc) {
    try {
      grpcPort = await grpc.listen(options.grpcPort!, options.host);
    } catch (error) {
      await http.drain();
      await backend.close();
      throw new Error(`cannot serve gRPC on ${options.host}:${options.grpcPort} (SLUICE_GRPC_PORT; 0 turns it off): ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  let closing: Promise<void> | null = null;
  function close(): Promise<void> {
    closing ??= (async () => {
      await Promise.all([http.drain(), grpc?.drain()]);
      clearInterval(usageTimer);
      clearInterval(denialTimer);
      clearInterval(tokenUseTimer);
      await recordTokenUse();
      writeDenials();
      await backend.close();
      await localStore.close().catch(() => undefined);
    })();
    return closing;
  }

  return { port, grpcPort, httpServer: http.kind, engine, metrics, policy: backend.policy, close };
}
