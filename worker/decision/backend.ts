/**
 * What differs between the two modes of the decision server (docs/architecture.md "Modes"): where policy, API
 * keys, service tokens, counters and usage live. `redis` (redis-backend.ts, the default, any
 * number of replicas) and `single-node` (single-node-backend.ts: no Redis, Postgres polled,
 * counters in process, exactly one replica). The HTTP adapter and the engine are the same for both.
 */
import type { Logger } from "../../lib/log";
import type { CircuitBreaker } from "../../lib/decision/breaker";
import type { PolicyPort } from "../../lib/decision/ports";
import type { KeyIndexPort, UsageSink } from "../../lib/decision/ports";
import type { CompiledPolicy } from "../../lib/policy/compiled";
import type { EnvoyCounterStore } from "../../lib/envoy/counter-store";
import type { CounterStore } from "../../lib/store/types";
import type { TenantUsageReader } from "../../lib/decision/tenant-usage";
import type { DecisionServerOptions } from "./options";
import type { Registry } from "prom-client";

export interface Backend {
  policy: PolicyPort;
  /** The document decisions use (single-node: only once the key index is loaded as well). */
  currentPolicy: () => CompiledPolicy | null;
  /** The document that decides for a tenant (a guarded rollout's cohort: the candidate); absent: currentPolicy. */
  policyFor?: (tenant: string) => CompiledPolicy | null;
  keyIndex: KeyIndexPort;
  store: CounterStore;
  /** Their fixed window for `rateLimitService` domains (lib/envoy/counter-store.ts). */
  envoyCounters: EnvoyCounterStore;
  usage: UsageSink;
  /** GET /v1/usage's tenant tokens and counter reads; null: not served in this mode. */
  tenantUsage: TenantUsageReader | null;
  /** Before listening: connect and load what the first request needs. */
  start(): Promise<void>;
  /** The /readyz answer. */
  readiness(): { ready: boolean; body: Record<string, unknown> };
  /** Every second. */
  flushUsage(): Promise<unknown>;
  /** Once a minute, off the decision path: the service tokens accepted since the last call (sha256 hex). */
  recordTokenUse(tokenHashes: readonly string[], atMs: number): Promise<void>;
  /** After draining: stop following, write the last usage, close the store and connections. */
  close(): Promise<void>;
}

/** What the wiring gives a backend: its options and the reactions shared by both modes. */
export interface BackendContext {
  options: DecisionServerOptions;
  /** What the modules a backend builds report: problems, written as warnings. */
  log: (message: string) => void;
  logger: Logger;
  breaker: CircuitBreaker;
  /** The decision server's /metrics registry (the replication link's series). */
  registry: Registry;
  /** Shared reaction to a new document (metrics, deny cache, log). */
  policyLoaded(doc: CompiledPolicy): void;
  /** The shares of `split` limits changed (docs/regions.md): cached denials may name the old numbers. */
  sharesChanged(): void;
  /** Shared reaction to a guarded rollout's split changing (null: no rollout; everyone on the live version). */
  rolloutLoaded?(split: { id: string; step: number; candidateVersion: number; cohortSize: number } | null): void;
  /** The published service tokens (sha256 hex), replacing the previous set. */
  serviceTokens(hashes: Set<string>): void;
}
