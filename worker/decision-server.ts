/**
 * The decision server (`npm run decision`): plain node:http in front of lib/decision's engine.
 * The contract is DESIGN.md §5: POST /v1/check (single or batch), ANY /v1/forward-auth,
 * POST /v1/release, GET /healthz, /readyz, /metrics.
 *
 * Hardening: bodies over 64 KiB get 413 without being read further; bad JSON or fields get 400
 * naming the field; header and request timeouts cut slow clients; nothing a client sends reaches
 * a stack trace (every handler is wrapped, errors answer a fixed JSON body); SIGTERM stops
 * accepting, drains in-flight requests, flushes usage and exits.
 *
 * Service tokens: `Authorization: Bearer <token>` (X-Sluice-Token on forward-auth) is accepted
 * when sha256(token) is in the Redis set `keys.serviceTokens()` (written by publish from the
 * ApiToken table, refreshed on every policy poll) or in SLUICE_SERVICE_TOKENS; the decision path
 * never touches Postgres.
 *
 * Two backends behind the same HTTP code, chosen by SLUICE_MODE (DESIGN.md §7): `redis` (the
 * default, any number of replicas) and `single-node` (no Redis: policy, API keys and service tokens
 * polled from Postgres, counters in process, usage aggregates written to Postgres by the rollup's
 * own code; exactly one replica, enforced by a Postgres advisory lock). See lib/single-node/.
 */
import http from "node:http";
import { pathToFileURL } from "node:url";
import { Cluster, Redis, type RedisOptions } from "ioredis";
import type { RedisClient } from "../lib/redis/client";
import { createDb } from "../lib/db/client";
import { env, type SluiceMode } from "../lib/env";
import { CircuitBreaker } from "../lib/decision/breaker";
import { DenyCache } from "../lib/decision/deny-cache";
import { DecisionEngine, NotReadyError, type DecisionRequest, type EngineDeps, type UsageSink } from "../lib/decision/engine";
import { DecisionMetrics } from "../lib/decision/metrics";
import { PolicySource, type PolicyPort } from "../lib/decision/policy-source";
import { MAX_BATCH, parseCheckBody, parseReleaseBody, type FieldError } from "../lib/decision/request";
import type { DecisionAnswer } from "../lib/decision/answer";
import type { CompiledPolicy } from "../lib/policy/compiled";
import { KeyIndex, sha256Hex } from "../lib/redis/key-index";
import { UsageRecorder } from "../lib/redis/usage";
import { createMemoryStore } from "../lib/store/memory";
import { createRedisStore } from "../lib/store/redis";
import type { CounterStore } from "../lib/store/types";
import { checkSingleNodeEnv, SingleNodeConfigError } from "../lib/single-node/config";
import { acquireInstanceLock } from "../lib/single-node/instance-lock";
import { PostgresKeyIndex } from "../lib/single-node/postgres-key-index";
import { PostgresPolicySource } from "../lib/single-node/postgres-policy-source";
import { PostgresUsageSink } from "../lib/single-node/postgres-usage-sink";
import { seedQuotaCounters } from "../lib/single-node/seed-quotas";
import { messageOf, withQueryTimeout } from "../lib/single-node/timeout";

export const MAX_BODY_BYTES = 64 * 1024;
const MAX_FIELD_CHARS = 512;

/** Single-node: how often Postgres is asked for a new policy version, key changes and service tokens. */
export const SINGLE_NODE_POLL_MS = 500;

export interface DecisionServerOptions {
  port: number;
  host: string;
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
  /** Store override (tests); default the Redis store (single-node: the in-process store). */
  store?: CounterStore;
  log?: (message: string) => void;
}

export interface DecisionServer {
  port: number;
  engine: DecisionEngine;
  metrics: DecisionMetrics;
  policy: PolicyPort;
  close(): Promise<void>;
}

function normalizeTokenHash(entry: string): string {
  const t = entry.trim();
  return /^[0-9a-f]{64}$/.test(t) ? t : sha256Hex(t);
}

/** Also the prefix of Envoy ext_authz's requests: `/v1/forward-auth/<the client's path>`. */
const FORWARD_AUTH_PATH = "/v1/forward-auth";

function json(res: http.ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  const text = JSON.stringify(body);
  // A flat [name, value, …] list: node writes it as is, without merging an object per response.
  const list: string[] = ["Content-Type", "application/json", "Content-Length", String(Buffer.byteLength(text)), "Cache-Control", "no-store"];
  if (headers) for (const name in headers) list.push(name, headers[name]!);
  res.writeHead(status, list);
  res.end(text);
}

function errorBody(code: string, message: string, field?: string) {
  return { error: field === undefined ? { code, message } : { code, message, field } };
}

function invalid(res: http.ServerResponse, e: FieldError): void {
  json(res, 400, errorBody("invalid_request", e.message, e.field));
}

class BodyTooLarge extends Error {}

/** Reads the body up to MAX_BODY_BYTES; rejects with BodyTooLarge past it. */
function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"] ?? "0");
    if (declared > MAX_BODY_BYTES) {
      reject(new BodyTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on("data", (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        done = true;
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (!done) {
        done = true;
        resolve(Buffer.concat(chunks, size));
      }
    });
    req.on("error", (e) => {
      if (!done) {
        done = true;
        reject(e);
      }
    });
  });
}

function parseJson(buf: Buffer): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(buf.toString("utf8")) as unknown };
  } catch {
    return { ok: false };
  }
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function bearer(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(value.trim());
  return m ? m[1]!.trim() : undefined;
}

function createRedis(options: DecisionServerOptions, role: "main" | "subscriber"): RedisClient {
  const common: RedisOptions = {
    // Decision path: fail fast instead of queueing while disconnected; reconnect with short backoff.
    enableOfflineQueue: role === "subscriber",
    maxRetriesPerRequest: role === "subscriber" ? null : 0,
    // No auto-pipelining: the Redis store already sends the decisions of one event-loop turn as
    // one call; ioredis's own batching would hold that call for another turn and cost more CPU
    // than it saves (measured: 8.0–9.1k → 11.4–15.1k single checks/s, bench/profile-run.mts).
    enableAutoPipelining: false,
    commandTimeout: role === "main" ? Math.max(options.redisTimeoutMs * 4, 100) : undefined,
    retryStrategy: (times) => Math.min(50 * times, 500),
    connectTimeout: 2_000,
    lazyConnect: false,
  };
  if (options.clusterNodes) {
    const nodes = options.clusterNodes.split(",").map((hp) => {
      const [host, port] = hp.trim().split(":");
      return { host: host ?? "127.0.0.1", port: Number(port ?? 6379) };
    });
    return new Cluster(nodes, {
      redisOptions: common,
      enableOfflineQueue: common.enableOfflineQueue,
      enableAutoPipelining: common.enableAutoPipelining,
      clusterRetryStrategy: (times) => Math.min(100 * times, 1_000),
    });
  }
  return new Redis(options.redisUrl ?? "redis://127.0.0.1:6379", common);
}

/** What differs between the modes: where policy, keys, tokens, counters and usage live. */
interface Backend {
  policy: PolicyPort;
  /** The document decisions use (single-node: only once the key index is loaded as well). */
  currentPolicy: () => CompiledPolicy | null;
  keyIndex: EngineDeps["keyIndex"];
  store: CounterStore;
  usage: UsageSink;
  /** Before listening: connect and load what the first request needs. */
  start(): Promise<void>;
  /** The /readyz answer. */
  readiness(): { ready: boolean; body: Record<string, unknown> };
  /** Every second. */
  flushUsage(): Promise<unknown>;
  /** After draining: stop following, write the last usage, close the store and connections. */
  close(): Promise<void>;
}

interface BackendContext {
  options: DecisionServerOptions;
  log: (message: string) => void;
  breaker: CircuitBreaker;
  /** Shared reaction to a new document (metrics, deny cache, log). */
  policyLoaded(doc: CompiledPolicy): void;
  /** The published service tokens (sha256 hex), replacing the previous set. */
  serviceTokens(hashes: Set<string>): void;
}

function redisBackend(ctx: BackendContext): Backend {
  const { options, log, breaker } = ctx;
  const redis = createRedis(options, "main");
  const subscriber = createRedis(options, "subscriber");
  redis.on("error", () => undefined);
  subscriber.on("error", () => undefined);
  const keyIndex = new KeyIndex(redis);
  const usage = new UsageRecorder(redis);
  const policy = new PolicySource({
    redis,
    subscriber,
    pollMs: options.pollMs,
    log,
    onPolicy: (doc, previous) => {
      if (previous) {
        // Cached keys keep answering and are re-read in the background (no miss storm per publish).
        keyIndex.markStale();
        void keyIndex.warm().catch(() => undefined);
      }
      ctx.policyLoaded(doc);
    },
    onKeyRevoked: (hash) => keyIndex.evict(hash),
    onResubscribed: () => keyIndex.clear(),
    onServiceTokens: (hashes) => ctx.serviceTokens(hashes),
  });
  const store = options.store ?? createRedisStore(redis);
  return {
    policy,
    currentPolicy: () => policy.current,
    keyIndex,
    store,
    usage,
    async start() {
      // The decision path never queues commands while disconnected, so wait (briefly) for the
      // connection before the first policy read; if Redis is down, polling keeps trying.
      if (redis.status !== "ready") {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 5_000);
          t.unref();
          redis.once("ready", () => {
            clearTimeout(t);
            resolve();
          });
        });
      }
      await policy.start();
      // Small key indexes are loaded whole before the first request (bounded wait; lookups still work
      // one by one if it fails or is too large).
      await Promise.race([keyIndex.warm().catch(() => 0), new Promise((r) => setTimeout(r, 2_000).unref())]);
    },
    readiness() {
      const doc = policy.current;
      const redisUp = redis.status === "ready";
      const ready = doc !== null && redisUp;
      return { ready, body: { ready, policyVersion: doc?.version ?? null, redis: redisUp, breaker: breaker.state } };
    },
    flushUsage: () => usage.flush(),
    async close() {
      policy.stop();
      await usage.flush().catch(() => undefined);
      await store.close().catch(() => undefined);
      redis.disconnect();
      subscriber.disconnect();
    },
  };
}

/**
 * Single-node (SLUICE_MODE=single-node): no Redis at all. Refuses to start without a database, with
 * one that is not migrated, or while another single-node decision server holds the lock.
 */
async function singleNodeBackend(ctx: BackendContext): Promise<Backend> {
  const { options, log } = ctx;
  const { problems } = checkSingleNodeEnv({
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: undefined,
    REDIS_CLUSTER_NODES: options.clusterNodes,
    SLUICE_INSTANCES: options.instances,
  });
  if (problems.length > 0) throw new SingleNodeConfigError(problems);
  const databaseUrl = options.databaseUrl!;
  const db = createDb(databaseUrl);
  try {
    await withQueryTimeout(db.$queryRawUnsafe(`SELECT 1 FROM "PolicyVersion" LIMIT 1`), "checking the database");
  } catch (error) {
    await db.$disconnect().catch(() => undefined);
    throw new Error(`single-node: cannot read the PolicyVersion table at DATABASE_URL (${messageOf(error)}); is PostgreSQL up and migrated (npm run db:migrate)?`);
  }
  let lock: Awaited<ReturnType<typeof acquireInstanceLock>>;
  try {
    lock = await acquireInstanceLock(databaseUrl, log);
  } catch (error) {
    await db.$disconnect().catch(() => undefined);
    throw error;
  }
  const pollMs = options.changePollMs ?? SINGLE_NODE_POLL_MS;
  const keyIndex = new PostgresKeyIndex({ db, pollMs, log });
  const usage = new PostgresUsageSink({ db, log });
  const policy = new PostgresPolicySource({
    db,
    pollMs,
    log,
    onPolicy: (doc) => ctx.policyLoaded(doc),
    onServiceTokens: (hashes) => ctx.serviceTokens(hashes),
  });
  const store = options.store ?? createMemoryStore();
  const release = async () => {
    policy.stop();
    keyIndex.stop();
    await lock.release();
    await db.$disconnect().catch(() => undefined);
  };
  return {
    policy,
    // Not ready (503 not_ready) until the keys are loaded too: an unloaded index must not mean "unknown key" nor "fail open".
    currentPolicy: () => (keyIndex.loaded ? policy.current : null),
    keyIndex,
    store,
    usage,
    async start() {
      await Promise.all([policy.start(), keyIndex.start()]);
      try {
        // Quota counters are in process: seed this day's and month's from Postgres, or a restart would hand out fresh quotas.
        const seeded = await seedQuotaCounters(db, store, { nowMs: Date.now() });
        log(`single-node mode: no Redis; counters in process; ${seeded.counters} quota counters seeded from QuotaUsage`);
      } catch (error) {
        await release();
        throw new Error(`single-node: seeding quota counters from QuotaUsage failed: ${messageOf(error)}`);
      }
    },
    readiness() {
      const doc = policy.current;
      const ready = doc !== null && keyIndex.loaded;
      return { ready, body: { ready, policyVersion: doc?.version ?? null, mode: "single-node", keysLoaded: keyIndex.loaded, postgres: policy.postgresOk } };
    },
    flushUsage: () => usage.flush(),
    async close() {
      policy.stop();
      keyIndex.stop();
      await usage.close().catch(() => undefined);
      await store.close().catch(() => undefined);
      await release();
    },
  };
}

export async function startDecisionServer(options: DecisionServerOptions): Promise<DecisionServer> {
  const log = options.log ?? ((m: string) => process.stderr.write(`[decision] ${m}\n`));
  const metrics = new DecisionMetrics();
  const breaker = new CircuitBreaker();
  metrics.setBreaker("closed");
  breaker.onChange = (state) => {
    metrics.setBreaker(state);
    log(`circuit breaker ${state}`);
  };
  const denyCache = options.denyCache === false ? null : new DenyCache();
  const staticTokens = new Set(options.serviceTokens.filter((t) => t.trim() !== "").map(normalizeTokenHash));
  /** Service tokens published from the ApiToken table (Redis set, or Postgres in single-node mode). */
  let publishedTokens = new Set<string>();

  const context: BackendContext = {
    options,
    log,
    breaker,
    policyLoaded: (doc) => {
      metrics.policyVersion.set(doc.version);
      denyCache?.clear();
      log(`policy v${doc.version} loaded`);
    },
    serviceTokens: (hashes) => {
      publishedTokens = hashes;
    },
  };
  const backend = (options.mode ?? "redis") === "single-node" ? await singleNodeBackend(context) : redisBackend(context);
  const { policy, store, usage } = backend;
  const currentPolicy = backend.currentPolicy;

  const localStore = createMemoryStore();
  const engine = new DecisionEngine({
    policy: currentPolicy,
    keyIndex: backend.keyIndex,
    store,
    localStore,
    instances: options.instances,
    storeTimeoutMs: options.redisTimeoutMs,
    breaker,
    denyCache,
    usage,
    metrics,
  });

  // sha256 of the few service tokens callers present, so a request does not hash its token again
  // (bounded: a caller cycling random tokens only ever fills it, then it is dropped).
  const tokenHashes = new Map<string, string>();
  function tokenOk(token: string | undefined): boolean {
    if (!token || token.length > MAX_FIELD_CHARS) return false;
    let hash = tokenHashes.get(token);
    if (hash === undefined) {
      hash = sha256Hex(token);
      if (tokenHashes.size >= 64) tokenHashes.clear();
      tokenHashes.set(token, hash);
    }
    if (staticTokens.has(hash) || publishedTokens.has(hash)) return true;
    return false;
  }

  function notReady(res: http.ServerResponse): void {
    json(res, 503, errorBody("not_ready", "no policy loaded yet"), { "Retry-After": "1" });
  }

  async function handleCheck(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (!tokenOk(bearer(header(req, "authorization")))) {
      json(res, 401, errorBody("unauthorized", "missing or wrong service token"), { "WWW-Authenticate": "Bearer" });
      req.resume();
      return;
    }
    const body = parseJson(await readBody(req));
    if (!body.ok) return invalid(res, { field: "", message: "body: malformed JSON" });
    const parsed = parseCheckBody(body.value);
    if (!parsed.ok) return invalid(res, parsed.error);
    // Server-Timing tells the caller how long the decision itself took (store call included).
    const started = performance.now();
    if (parsed.batch) {
      const results = await Promise.all(parsed.requests.map((r) => engine.decide(r)));
      return json(res, 200, { results }, { "Server-Timing": `decide;dur=${(performance.now() - started).toFixed(2)}` });
    }
    const answer = await engine.decide(parsed.request);
    json(res, 200, answer, { "Server-Timing": `decide;dur=${(performance.now() - started).toFixed(2)}` });
  }

  async function handleForwardAuth(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    req.resume();
    if (!tokenOk(header(req, "x-sluice-token"))) {
      json(res, 401, errorBody("unauthorized", "missing or wrong X-Sluice-Token"));
      return;
    }
    let method = header(req, "x-forwarded-method") ?? header(req, "x-original-method");
    let uri = header(req, "x-forwarded-uri") ?? header(req, "x-original-uri");
    // Envoy's ext_authz (HTTP service) sends none of those: it repeats the client's method and
    // appends the client's path to its `path_prefix`, so `/v1/forward-auth/v1/orders/42?x=1` asks
    // about `GET /v1/orders/42?x=1` (examples/gateways/envoy.yaml).
    const rest = (req.url ?? "").slice(FORWARD_AUTH_PATH.length);
    if (!method && !uri && rest.startsWith("/")) {
      method = req.method;
      uri = rest;
    }
    if (!method || !uri) {
      return invalid(res, {
        field: "X-Forwarded-Uri",
        message: "X-Forwarded-Method and X-Forwarded-Uri (or X-Original-*) are required, or the client's path after /v1/forward-auth",
      });
    }
    const operation = `${method} ${uri}`;
    if (operation.length > MAX_FIELD_CHARS) return invalid(res, { field: "X-Forwarded-Uri", message: "operation: at most 512 characters" });
    const apiKey = header(req, "x-api-key") ?? bearer(header(req, "authorization")) ?? header(req, "authorization");
    const forwarded = header(req, "x-forwarded-for")?.split(",")[0]?.trim();
    const ip = forwarded || header(req, "x-real-ip")?.trim() || undefined;
    if (apiKey === undefined || apiKey === "") {
      const doc = currentPolicy();
      if (!doc) return notReady(res);
      const answer: DecisionAnswer = {
        allowed: false,
        status: 401,
        reason: "unknown_key",
        tenant: null,
        tier: null,
        operation: null,
        policyVersion: doc.version,
        limit: 0,
        remaining: 0,
        resetSeconds: 0,
        retryAfterSeconds: 0,
        delayMs: 0,
        headers: {},
      };
      return json(res, 401, answer);
    }
    if (apiKey.length > MAX_FIELD_CHARS) return invalid(res, { field: "X-Api-Key", message: "key: at most 512 characters" });
    const request: DecisionRequest = { key: apiKey, operation };
    if (ip && /^[0-9a-fA-F:.]{2,64}$/.test(ip)) request.ip = ip;
    const answer = await engine.decide(request);
    const headers: Record<string, string> = { ...answer.headers, "X-Sluice-Reason": answer.reason };
    if (answer.tenant) headers["X-Sluice-Tenant"] = answer.tenant;
    if (answer.delayMs > 0) headers["X-Sluice-Delay-Ms"] = String(answer.delayMs);
    if (answer.leaseId) headers["X-Sluice-Lease"] = answer.leaseId;
    json(res, answer.status, answer, headers);
  }

  async function handleRelease(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (!tokenOk(bearer(header(req, "authorization")))) {
      json(res, 401, errorBody("unauthorized", "missing or wrong service token"));
      req.resume();
      return;
    }
    const body = parseJson(await readBody(req));
    if (!body.ok) return invalid(res, { field: "", message: "body: malformed JSON" });
    const parsed = parseReleaseBody(body.value);
    if (!parsed.ok) return invalid(res, parsed.error);
    json(res, 200, { released: await engine.release(parsed.leaseId) });
  }

  const routes: Record<string, { methods: string[] | null; handle: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> | void }> = {
    "/v1/check": { methods: ["POST"], handle: handleCheck },
    [FORWARD_AUTH_PATH]: { methods: null, handle: handleForwardAuth },
    "/v1/release": { methods: ["POST"], handle: handleRelease },
    "/healthz": { methods: ["GET", "HEAD"], handle: (_req, res) => json(res, 200, { ok: true }) },
    "/readyz": {
      methods: ["GET", "HEAD"],
      handle: (_req, res) => {
        const { ready, body } = backend.readiness();
        json(res, ready ? 200 : 503, body);
      },
    },
    "/metrics": {
      methods: ["GET"],
      handle: async (_req, res) => {
        const text = await metrics.registry.metrics();
        res.writeHead(200, { "Content-Type": metrics.registry.contentType });
        res.end(text);
      },
    },
  };

  let inFlight = 0;
  let draining = false;
  let drained: (() => void) | null = null;

  const server = http.createServer({ requestTimeout: 10_000, headersTimeout: 5_000, keepAliveTimeout: 5_000 }, (req, res) => {
    inFlight++;
    res.on("close", () => {
      inFlight--;
      if (draining && inFlight === 0) drained?.();
    });
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    const route = Object.hasOwn(routes, path) ? routes[path] : path.startsWith(`${FORWARD_AUTH_PATH}/`) ? routes[FORWARD_AUTH_PATH] : undefined;
    if (draining) res.setHeader("Connection", "close");
    if (!route) {
      req.resume();
      return json(res, 404, errorBody("not_found", "no such endpoint"));
    }
    if (route.methods && !route.methods.includes(req.method ?? "")) {
      req.resume();
      return json(res, 405, errorBody("method_not_allowed", `use ${route.methods.join(", ")}`), { Allow: route.methods.join(", ") });
    }
    const fail = (error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (error instanceof BodyTooLarge) {
        json(res, 413, errorBody("payload_too_large", `body over ${MAX_BODY_BYTES} bytes`), { Connection: "close" });
        req.destroy();
        return;
      }
      if (error instanceof NotReadyError) return notReady(res);
      log(`internal error on ${path}: ${error instanceof Error ? error.message : String(error)}`);
      json(res, 500, errorBody("internal", "internal error"));
    };
    try {
      const pending = route.handle(req, res);
      if (pending) pending.catch(fail);
    } catch (error) {
      fail(error);
    }
  });
  server.on("clientError", (_err, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"error\":{\"code\":\"invalid_request\",\"message\":\"malformed HTTP\"}}");
    else socket.destroy();
  });
  server.maxHeadersCount = 100;

  await backend.start();
  if (policy.current) metrics.policyVersion.set(policy.current.version);

  const usageTimer = setInterval(() => void backend.flushUsage(), 1_000);
  usageTimer.unref();

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : options.port;

  let closing: Promise<void> | null = null;
  async function close(): Promise<void> {
    if (closing) return closing;
    closing = (async () => {
      draining = true;
      server.close();
      server.closeIdleConnections();
      if (inFlight > 0) {
        await new Promise<void>((resolve) => {
          drained = resolve;
          setTimeout(resolve, 10_000).unref();
        });
      }
      server.closeAllConnections();
      clearInterval(usageTimer);
      await backend.close();
      await localStore.close().catch(() => undefined);
    })();
    return closing;
  }

  return { port, engine, metrics, policy, close };
}

/** `npm run decision`. */
async function main(): Promise<void> {
  const e = env();
  const singleNode = e.SLUICE_MODE === "single-node";
  if (singleNode) {
    const { problems, warnings } = checkSingleNodeEnv(e);
    if (problems.length > 0) throw new SingleNodeConfigError(problems);
    for (const warning of warnings) process.stderr.write(`[decision] ${warning}\n`);
  }
  const server = await startDecisionServer({
    port: e.DECISION_PORT,
    host: e.DECISION_HOST,
    mode: e.SLUICE_MODE,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL ?? "redis://127.0.0.1:6379",
    clusterNodes: e.REDIS_CLUSTER_NODES,
    redisTimeoutMs: e.REDIS_TIMEOUT_MS,
    pollMs: e.POLICY_POLL_MS,
    instances: e.SLUICE_INSTANCES,
    serviceTokens: (e.SLUICE_SERVICE_TOKENS ?? "").split(","),
    denyCache: e.SLUICE_DENY_CACHE === "1",
  });
  const modeNote = singleNode ? "single-node: no Redis, in-process counters, one replica only; " : "";
  process.stdout.write(`decision server listening on :${server.port} (${modeNote}policy v${server.policy.current?.version ?? "none"}, max batch ${MAX_BATCH})\n`);
  let outputLost = false;
  const stop = (signal: string) => {
    if (!outputLost) process.stdout.write(`${signal}: draining\n`);
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
    if (!outputLost) process.stderr.write(`[decision] uncaught: ${error.message}\n`);
  });
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    process.stderr.write(`decision server failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
