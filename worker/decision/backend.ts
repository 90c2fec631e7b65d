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
import type { CounterStore } from "../../lib/store/types";
import type { DecisionServerOptions } from "./options";

export interface Backend {
  policy: PolicyPort;
  /** The document decisions use (single-node: only once the key index is loaded as well). */
  currentPolicy: () => CompiledPolicy | null;
  keyIndex: KeyIndexPort;
  store: CounterStore;
  usage: UsageSink;
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
  /** Shared reaction to a new document (metrics, deny cache, log). */
  policyLoaded(doc: CompiledPolicy): void;
  /** The shares of `split` limits changed (docs/regions.md): cached denials may name the old numbers. */
  sharesChanged(): void;
  /** The published service tokens (sha256 hex), replacing the previous set. */
  serviceTokens(hashes: Set<string>): void;
}
