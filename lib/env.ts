/**
 * Every environment variable Sluice reads, in one schema, parsed with zod. `.env.example`
 * documents each. This is the only module that touches `process.env` (eslint.config.mjs enforces
 * it; the exceptions are listed there): processes read `env()` once at start; code that runs in a
 * process which sets or changes a variable after it started (the demo, tests) reads
 * `currentEnv(name)`. lib/policy never reads the environment.
 */
import { z } from "zod";
import { CLIENT_ADDRESS_SETTINGS, parseTrustedProxies } from "./decision/client-address";

const port = z.coerce.number().int().min(1).max(65535);
const ms = z.coerce.number().int().min(1).max(600_000);
/** A URL, where an empty value (`REDIS_URL=` in a .env file or a compose file) means unset. */
const optionalUrl = z.preprocess((v) => (v === "" ? undefined : v), z.string().url().optional());

/** `redis` (default): counters, policy and usage in Redis. `single-node`: no Redis at all (docs/operations.md "Single-node mode"). */
export const SLUICE_MODES = ["redis", "single-node"] as const;
export type SluiceMode = (typeof SLUICE_MODES)[number];
const modeSchema = z.enum(SLUICE_MODES, `expected ${SLUICE_MODES.join(" or ")}`).default("redis");

/** A region's name (SLUICE_REGION, and each name of SLUICE_REGIONS): it appears in logs, metrics labels and Redis keys. */
export const REGION_NAME = /^[a-z][a-z0-9-]{0,31}$/;
const REGION_NAME_MESSAGE = "expected a region name of lowercase letters, digits and - (at most 32, starting with a letter)";

/** One region of SLUICE_REGIONS: its name and its Redis. */
export interface RegionConfig {
  name: string;
  redisUrl: string;
}

/**
 * SLUICE_REGIONS: `<name>=<redis url>,…`. Empty or unset: no regions (the one Redis of REDIS_URL).
 * Every problem names its entry: `entry 2 ("eu=…"): expected a redis:// or rediss:// URL`.
 */
const regionsSchema = z.preprocess(
  (v) => (v === undefined ? "" : v),
  z.string().transform((text, ctx): RegionConfig[] => {
    const entries = text.split(",").map((s) => s.trim()).filter(Boolean);
    const out: RegionConfig[] = [];
    entries.forEach((entry, i) => {
      const where = `entry ${i + 1} (${JSON.stringify(entry)})`;
      const eq = entry.indexOf("=");
      if (eq < 0) return ctx.addIssue({ code: "custom", message: `${where}: expected <name>=<redis url>` });
      const name = entry.slice(0, eq).trim();
      const redisUrl = entry.slice(eq + 1).trim();
      if (!REGION_NAME.test(name)) return ctx.addIssue({ code: "custom", message: `${where}: ${REGION_NAME_MESSAGE}` });
      if (out.some((r) => r.name === name)) return ctx.addIssue({ code: "custom", message: `${where}: region ${name} is listed twice` });
      if (!/^rediss?:\/\/[^\s]+$/.test(redisUrl) || !URL.canParse(redisUrl)) {
        return ctx.addIssue({ code: "custom", message: `${where}: expected a redis:// or rediss:// URL` });
      }
      out.push({ name, redisUrl });
    });
    return out;
  }),
);

const envSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  /**
   * `redis` (default) or `single-node`: one decision server with in-process counters, reading the
   * published policy, keys and service tokens from Postgres and writing usage there; no Redis.
   */
  SLUICE_MODE: modeSchema,
  /** PostgreSQL. Unset: `npm run demo` starts an embedded PostgreSQL with its data in .data/. */
  DATABASE_URL: optionalUrl,
  /** Redis. Unset: the demo starts redis-server from PATH, else runs single-node in-process. */
  REDIS_URL: optionalUrl,
  /** host:port,host:port — switches every process to Redis Cluster. */
  REDIS_CLUSTER_NODES: z.string().optional(),
  /** Namespace of every Redis key (one deployment, or one test run). */
  SLUICE_REDIS_PREFIX: z.string().regex(/^[A-Za-z0-9:_-]{0,32}$/).default("sl:"),
  /** Per-command Redis timeout on the decision path. */
  REDIS_TIMEOUT_MS: ms.default(25),
  DECISION_PORT: port.default(8787),
  DECISION_HOST: z.string().default("0.0.0.0"),
  /** The decision server's region (docs/regions.md): in its start-up line, /metrics labels, /healthz and /readyz. Unset: no region. */
  SLUICE_REGION: z.preprocess((v) => (v === "" ? undefined : v), z.string().regex(REGION_NAME, REGION_NAME_MESSAGE).optional()),
  /**
   * The control plane, the worker and the CLI: `<name>=<redis url>,…`, every region's Redis. Every
   * publish, rollback, key and token change goes to each; the worker brings a region that missed one
   * up to date (docs/regions.md). Unset: the one Redis of REDIS_URL.
   */
  SLUICE_REGIONS: regionsSchema,
  /**
   * Decision servers where a limit is `regions: shared` (docs/regions.md): the NATS server(s) with
   * JetStream that carry what each region admitted to the others, `nats://host:port` (several:
   * comma-separated). Needs SLUICE_REGION. Unset: shared limits count this region's traffic only,
   * and /readyz says so.
   */
  SLUICE_REPLICATION_URL: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z
      .string()
      .regex(/^(nats|tls):\/\/[^\s,]+(,(nats|tls):\/\/[^\s,]+)*$/, "expected nats://host:port (several: comma-separated)")
      .optional(),
  ),
  /**
   * Decision servers with SLUICE_REPLICATION_URL (docs/regions.md, "A partial cut"): another region
   * from which no batch or heartbeat arrived for longer is silent, and this region enforces each
   * shared limit minus that region's last share until it is heard from again.
   */
  SLUICE_REPLICATION_SILENT_MS: z.coerce.number().int().min(1_000).max(600_000).default(10_000),
  /** The worker, with SLUICE_REGIONS: how often the shares of `split` limits are re-balanced from each region's demand. */
  SLUICE_REGION_REBALANCE_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(10_000),
  /** Envoy's rate limit service protocol (gRPC, h2c) on this port of DECISION_HOST; 0 turns it off. */
  SLUICE_GRPC_PORT: z.coerce.number().int().min(0).max(65535).default(8081),
  /**
   * Decision gRPC: calls open at once on one connection (SETTINGS_MAX_CONCURRENT_STREAMS). It and
   * the SLUICE_GRPC_* limits below are lib/net/grpc-limits.ts's DEFAULT_GRPC_LIMITS
   * (lib/env.test.ts keeps them equal).
   */
  SLUICE_GRPC_MAX_STREAMS: z.coerce.number().int().min(1).max(10_000).default(100),
  /** Decision gRPC: request bytes one connection's unfinished calls may hold (RESOURCE_EXHAUSTED past it); at least one 64 KiB message. */
  SLUICE_GRPC_MAX_SESSION_BYTES: z.coerce.number().int().min(65_536).max(268_435_456).default(1_048_576),
  /** Decision gRPC: from a call's headers to the end of its message (DEADLINE_EXCEEDED past it). */
  SLUICE_GRPC_CALL_TIMEOUT_MS: ms.default(5_000),
  /** Decision gRPC: a connection without a call open for this long is closed (GOAWAY). */
  SLUICE_GRPC_IDLE_TIMEOUT_MS: ms.default(60_000),
  /** `1`: a ShouldRateLimit call without a token in its metadata may carry it in every descriptor (`sluice_token`, Contour); its message is then read before it is judged. */
  SLUICE_RLS_DESCRIPTOR_TOKENS: z.enum(["0", "1"]).default("0"),
  /**
   * The decision server's HTTP/1.1 server: `http1` (hand-written, the fastest) or `node` (node:http);
   * docs/decision-api.md#http. It and the SLUICE_HTTP_* limits below are lib/net/http-server.ts's
   * HTTP_SERVERS and DEFAULT_HTTP_LIMITS (which lib/env.ts may not import: lib/env.test.ts keeps them equal).
   */
  SLUICE_HTTP_SERVER: z.enum(["http1", "node"], "expected http1 or node").default("http1"),
  /** Decision HTTP: header lines per request (431 past it). */
  SLUICE_HTTP_MAX_HEADERS: z.coerce.number().int().min(8).max(1_000).default(100),
  /** Decision HTTP: request line and headers, in bytes (431 past it). */
  SLUICE_HTTP_MAX_HEADER_BYTES: z.coerce.number().int().min(1_024).max(1_048_576).default(16_384),
  /** Decision HTTP: a request body, in bytes (413 past it). */
  SLUICE_HTTP_MAX_BODY_BYTES: z.coerce.number().int().min(1_024).max(16_777_216).default(65_536),
  /** Decision HTTP: from a request's first byte to the end of its head (408 past it); at most SLUICE_HTTP_REQUEST_TIMEOUT_MS. */
  SLUICE_HTTP_HEADERS_TIMEOUT_MS: ms.default(5_000),
  /** Decision HTTP: from a request's first byte to the end of its body (408 past it). */
  SLUICE_HTTP_REQUEST_TIMEOUT_MS: ms.default(10_000),
  /** Decision HTTP: an idle connection is closed after this long. */
  SLUICE_HTTP_KEEP_ALIVE_TIMEOUT_MS: ms.default(5_000),
  /** Decision HTTP: requests of one connection read and not yet answered (the rest wait unread). */
  SLUICE_HTTP_MAX_PIPELINED: z.coerce.number().int().min(1).max(1_024).default(16),
  /** The rate limit service `domain` of Sluice's own descriptor keys (Envoy's ratelimit filter `domain`); every other domain is the policy's `rateLimitService`. */
  SLUICE_RLS_DOMAIN: z.string().min(1).max(256).default("sluice"),
  /**
   * Decision processes per decision server (node:cluster, sharing its ports; worker/decision/supervisor.ts).
   * Unset: the machine's cores (`os.availableParallelism()`), 1 in single-node mode (which allows no more).
   */
  SLUICE_DECISION_PROCESSES: z.coerce.number().int().min(1).max(256).optional(),
  /** Set by the supervisor for each decision process it starts (1…N), for its log lines; not a setting. */
  SLUICE_DECISION_PROCESS_INDEX: z.coerce.number().int().min(1).max(256).optional(),
  /** Number of decision server replicas; `local` failure mode enforces limit / this. */
  SLUICE_INSTANCES: z.coerce.number().int().min(1).max(10_000).default(1),
  /** Service tokens the decision API accepts besides the Redis set (comma-separated sha256 hex or plaintexts). */
  SLUICE_SERVICE_TOKENS: z.string().optional(),
  /** Forward-auth: the one header that names the client (docs/decision-api.md "Client addresses"). */
  SLUICE_CLIENT_ADDRESS_HEADER: z.preprocess(
    (v) => (typeof v === "string" ? v.toLowerCase().replace(/\s+/g, "") : v),
    z.enum(CLIENT_ADDRESS_SETTINGS, `expected ${CLIENT_ADDRESS_SETTINGS.join(" or ")}`).default("x-real-ip,x-forwarded-for"),
  ),
  /** Forward-auth: X-Forwarded-For entries appended by trusted proxies in front of the gateway, skipped from the right. */
  SLUICE_TRUSTED_PROXY_HOPS: z.coerce.number().int().min(0).max(32).default(0),
  /** Forward-auth: comma-separated addresses or CIDRs of further trusted proxies, skipped from the right. */
  SLUICE_TRUSTED_PROXIES: z
    .string()
    .default("")
    .superRefine((v, ctx) => {
      try {
        parseTrustedProxies(v);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: error instanceof Error ? error.message : String(error) });
      }
    }),
  /** The live accuracy meter: fraction of approximate-limit subjects shadowed by an exact log (0 disables it). */
  SLUICE_ACCURACY_SAMPLE: z.coerce.number().min(0, "expected a fraction from 0 to 1").max(1, "expected a fraction from 0 to 1").default(0.01),
  /** Decision server deny cache (0 disables it; the bench and a test compare both). */
  SLUICE_DENY_CACHE: z.enum(["0", "1"]).default("1"),
  /** Policy poll interval, a backup for the PUBLISH channel. */
  POLICY_POLL_MS: ms.default(5_000),
  /** next-auth: the session signing secret (required in production). */
  NEXTAUTH_SECRET: z.string().min(16).optional(),
  NEXTAUTH_URL: optionalUrl,
  /** Grace window before a month's billing period is closed. */
  BILLING_GRACE_MS: z.coerce.number().int().min(0).default(3_600_000),
  /** Minute rollups older than this are downsampled to hours. */
  ROLLUP_DOWNSAMPLE_AFTER_MS: z.coerce.number().int().min(3_600_000).default(7 * 86_400_000),
  /** HTTPS URL the worker POSTs newly opened alerts to (optional). */
  ALERT_WEBHOOK_URL: optionalUrl,
  /** The decision servers' Prometheus metrics URL, linked from the Dashboards page (unset: no link, and the page says how to set it). */
  SLUICE_METRICS_URL: optionalUrl,
  /** Allow alert webhooks to private/loopback addresses (tests only). */
  ALERT_WEBHOOK_ALLOW_PRIVATE: z.enum(["0", "1"]).default("0"),
  /** Signs customer portal links (`sluice portal-link`); unset: derived from NEXTAUTH_SECRET (the CLI and the control plane must agree). */
  SLUICE_PORTAL_SECRET: z.string().min(16).optional(),
  /** Allow quota notification webhooks to private/loopback addresses and plain http (tests only). */
  SLUICE_NOTIFY_ALLOW_PRIVATE: z.enum(["0", "1"]).default("0"),
  /** The least severe log level written (lib/log.ts). */
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
  /** Decision server: how often denials are written, one line per reason (never one per request). */
  SLUICE_DENIAL_LOG_MS: z.coerce.number().int().min(100).max(3_600_000).default(10_000),
  /** `json` (default): one JSON object per line; `pretty`: human-readable lines (the demo). */
  LOG_FORMAT: z.enum(["json", "pretty"]).default("json"),
  /** Set by `npm run demo` for its children: the demo's fixed secrets are allowed in production mode. */
  SLUICE_DEMO: z.enum(["0", "1"]).optional(),
  /** The demo: where its embedded PostgreSQL and redis-server keep their files (default .data). */
  SLUICE_DATA_DIR: z.string().min(1).optional(),
  /** The control plane's port (`npm run start`, unless `-p` says otherwise); the demo's preferred one (the next free one is used if taken). */
  PORT: port.default(3000),
  /** The demo: 0 starts it without its traffic generator. */
  SLUICE_DEMO_TRAFFIC: z.enum(["0", "1"]).default("1"),
  /** The traffic generator (worker/traffic.ts): where to send, with which service token. */
  DECISION_URL: z.string().url().default("http://127.0.0.1:8787"),
  SLUICE_SERVICE_TOKEN: z.string().default(""),
  /** The traffic generator: comma-separated API keys, requests per second, and for how long (unset: until stopped). */
  TRAFFIC_KEYS: z.string().default(""),
  TRAFFIC_RPS: z.coerce.number().positive().max(100_000).default(20),
  TRAFFIC_SECONDS: z.coerce.number().positive().optional(),
  /** The login name the CLI records as the actor when the OS has no passwd entry for it. */
  USER: z.string().optional(),
});

export type Env = z.infer<typeof envSchema>;

/** The decision server's HTTP settings, as lib/net/http-server.ts's server kind and limits. */
export function decisionHttpSettings(e: Env) {
  return {
    server: e.SLUICE_HTTP_SERVER,
    limits: {
      maxHeaders: e.SLUICE_HTTP_MAX_HEADERS,
      maxHeaderBytes: e.SLUICE_HTTP_MAX_HEADER_BYTES,
      maxBodyBytes: e.SLUICE_HTTP_MAX_BODY_BYTES,
      headersTimeoutMs: e.SLUICE_HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.SLUICE_HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: e.SLUICE_HTTP_KEEP_ALIVE_TIMEOUT_MS,
      maxPipelined: e.SLUICE_HTTP_MAX_PIPELINED,
    },
  };
}

/** The decision server's gRPC limits, as lib/net/grpc-limits.ts's GrpcLimits. */
export function decisionGrpcLimits(e: Env) {
  return {
    maxStreams: e.SLUICE_GRPC_MAX_STREAMS,
    maxSessionBytes: e.SLUICE_GRPC_MAX_SESSION_BYTES,
    callTimeoutMs: e.SLUICE_GRPC_CALL_TIMEOUT_MS,
    idleTimeoutMs: e.SLUICE_GRPC_IDLE_TIMEOUT_MS,
  };
}

/** Settings that are wrong only together: every message names the variables. */
function crossChecks(e: Env): string[] {
  const problems: string[] = [];
  if (e.SLUICE_HTTP_HEADERS_TIMEOUT_MS > e.SLUICE_HTTP_REQUEST_TIMEOUT_MS) {
    problems.push("  SLUICE_HTTP_HEADERS_TIMEOUT_MS: must not exceed SLUICE_HTTP_REQUEST_TIMEOUT_MS (a head is part of its request)");
  }
  return problems;
}

/** Every variable the schema reads (docs/configuration.md lists each: lib/env.test.ts). */
export const ENV_VARIABLES = Object.keys(envSchema.shape) as (keyof Env)[];

let cached: Env | undefined;

/** Parses process.env once; a bad variable stops the process with a message naming it. */
export function env(): Env {
  cached ??= parseEnv(process.env);
  return cached;
}

/** env() for any record: throws an error that names every bad variable. */
export function parseEnv(source: Source): Env {
  const result = envSchema.safeParse(source);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`Invalid environment:\n${lines.join("\n")}`);
  }
  const problems = crossChecks(result.data);
  if (problems.length > 0) throw new Error(`Invalid environment:\n${problems.join("\n")}`);
  return result.data;
}

type Source = Readonly<Record<string, string | undefined>>;
const current = new Map<keyof Env, { raw: string | undefined; value: unknown }>();

/**
 * One variable, validated as env() validates it (an error names the variable), read from the
 * environment as it is now rather than from env()'s copy: for code that must not require the rest
 * of the environment to be valid (the control plane, the CLI), and for processes that set a
 * variable after they started (the demo sets DATABASE_URL once its embedded PostgreSQL is up;
 * tests point DATABASE_URL and SLUICE_REDIS_PREFIX at their own). Parsed again only when the raw
 * value changed, so it costs a lookup per call.
 */
export function currentEnv<K extends keyof Env>(name: K, source: Source = process.env): Env[K] {
  const raw = source[name];
  const live = source === process.env;
  const hit = live ? current.get(name) : undefined;
  if (hit && hit.raw === raw) return hit.value as Env[K];
  const result = envSchema.shape[name].safeParse(raw);
  if (!result.success) throw new Error(`Invalid environment:\n  ${name}: ${result.error.issues[0]?.message ?? "invalid"}`);
  const value = result.data as Env[K];
  if (live) current.set(name, { raw, value });
  return value;
}

/** SLUICE_MODE alone (see currentEnv). */
export function sluiceMode(source: Source = process.env): SluiceMode {
  return currentEnv("SLUICE_MODE", source);
}

/** The environment a child process starts with: this process's, plus `overrides`. */
export function childEnv(overrides: Readonly<Record<string, string | undefined>> = {}): NodeJS.ProcessEnv {
  return { ...process.env, ...overrides };
}

/**
 * Sets variables for code that reads process.env itself instead of through this module: Next.js's
 * standalone server takes its port and address from PORT and HOSTNAME (worker/control-plane.ts).
 */
export function exportEnv(values: Readonly<Record<string, string>>): void {
  Object.assign(process.env, values);
}

/** For tests that change the environment between cases. */
export function resetEnvForTests(): void {
  cached = undefined;
  current.clear();
}
