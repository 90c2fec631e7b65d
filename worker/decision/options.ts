/** How a decision server is started (worker/decision-server.ts reads them from the environment). */
import type { SluiceMode } from "../../lib/env";
import type { ClientAddressRules } from "../../lib/decision/client-address";
import type { GrpcLimits } from "../../lib/net/grpc-limits";
import type { HttpLimits, HttpServerKind } from "../../lib/net/http-server";
import type { Logger } from "../../lib/log";
import type { EnvoyCounterStore } from "../../lib/envoy/counter-store";
import type { CounterStore } from "../../lib/store/types";
import type { Registry } from "prom-client";

export interface DecisionServerOptions {
  port: number;
  host: string;
  /** SLUICE_REGION (docs/regions.md): a `region` label on every metric, and a field of /healthz and /readyz. */
  region?: string;
  /** SLUICE_REPLICATION_URL (docs/regions.md): NATS JetStream for `shared` limits; needs `region`. Redis mode only. */
  replicationUrl?: string;
  /** SLUICE_REPLICATION_SILENT_MS (docs/regions.md, "A partial cut"): another region not heard from for longer has its share of shared limits given up. */
  replicationSilentMs?: number;
  /** The gRPC rate limit service's port on `host` (Envoy RLS, worker/decision/grpc.ts); 0 or absent: not served. */
  grpcPort?: number;
  /** The rate limit service's `domain` of Sluice's own descriptor keys (default `sluice`); every other domain is the policy's `rateLimitService`. */
  rlsDomain?: string;
  /** SLUICE_RLS_DESCRIPTOR_TOKENS: a token in every descriptor counts when the metadata has none (default off). */
  rlsDescriptorTokens?: boolean;
  /** The gRPC port's limits (SLUICE_GRPC_*; default lib/net/grpc-limits.ts DEFAULT_GRPC_LIMITS). */
  grpcLimits?: GrpcLimits;
  /** `redis` (default) or `single-node` (no Redis; needs databaseUrl). */
  mode?: SluiceMode;
  /** Redis mode: redis://… (default redis://127.0.0.1:6379). */
  redisUrl?: string;
  clusterNodes?: string;
  /** Single-node mode: the PostgreSQL holding the published policy, keys, tokens and usage. */
  databaseUrl?: string;
  /** Single-node mode: Postgres poll interval (ms) for policy, keys and tokens (default SINGLE_NODE_POLL_MS). */
  changePollMs?: number;
  redisTimeoutMs: number;
  pollMs: number;
  instances: number;
  /** Extra accepted service tokens: sha256 hex or plaintext. */
  serviceTokens: string[];
  /** Disable the deny cache (the bench and a test compare with and without). */
  denyCache?: boolean;
  /** The accuracy meter's sample of approximate-limit subjects (SLUICE_ACCURACY_SAMPLE; default 0.01, 0 off). */
  accuracySample?: number;
  /** Store override (tests); default the Redis store (single-node: the in-process store). */
  store?: CounterStore;
  /** The `rateLimitService` fixed-window counters' override (tests: a test clock); default as `store`. */
  envoyCounters?: EnvoyCounterStore;
  /** Default: createLogger("decision") (lib/log.ts). */
  logger?: Logger;
  /** The HTTP/1.1 server (SLUICE_HTTP_SERVER; default `http1`, the hand-written one; `node`: node:http). */
  httpServer?: HttpServerKind;
  /** Its limits (SLUICE_HTTP_*; default lib/net/http-server.ts DEFAULT_HTTP_LIMITS). */
  httpLimits?: Partial<HttpLimits>;
  /** Forward-auth's client address (SLUICE_CLIENT_ADDRESS_HEADER, SLUICE_TRUSTED_PROXY_HOPS, SLUICE_TRUSTED_PROXIES); default X-Real-IP when present else X-Forwarded-For, no hops. */
  clientAddressRules?: ClientAddressRules;
  /** How often the service tokens accepted are written as "last used" (default 60 s; tests set less). */
  tokenUseFlushMs?: number;
  /** How often denials are written, one line per reason (default 10 s; lib/decision/denial-log.ts). */
  denialLogMs?: number;
  /**
   * One of several decision processes (worker/decision/supervisor.ts): given this process's
   * registry, the /metrics text of all of them. Absent: this process's registry.
   */
  joinMetrics?: (registry: Registry) => () => Promise<string>;
}
