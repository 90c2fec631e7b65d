/**
 * The decision engine, without HTTP: resolve the key to a tenant, the operation to its limits,
 * ask the counter store once, and answer (docs/semantics.md, docs/decision-api.md).
 *
 * Failure handling (docs/failure-modes.md): every store round trip has a budget (REDIS_TIMEOUT_MS,
 * 25 ms by default, measured from when the command is sent: see budgetFor) and goes through a
 * circuit breaker. When the store fails, times out or the
 * breaker is open, the operation's failure mode decides: `open` allows with `degraded: true`,
 * `closed` answers 503 `store_unavailable`, `local` checks an in-process store with every limit
 * divided by the number of instances (also `degraded: true`). A store call that timed out is never
 * retried: the script may have run, and a retry would count the request twice.
 */
import type { CompiledPolicy } from "../policy/compiled";
import { limitsFor } from "../policy/compile";
import { resolveOperation } from "../policy/match";
import { withTimeout } from "../net/timeout";
import { redisPrefix } from "../redis/keys";
import type { FailureMode } from "../policy/types";
import { ForgedLeaseError } from "../store/lease-id";
import { StoreTimeoutError, type CounterStore, type LimitCheck, type SettleResult, type StoreDecision } from "../store/types";
import { type AnswerContext, answerFromStore, type DecisionAnswer, plainAnswer } from "./answer";
import type { CircuitBreaker } from "./breaker";
import { localShare, planChecks, planUnresolvedChecks, type PlannedCheck } from "./checks";
import type { DenialLog } from "./denial-log";
import type { DenyCache } from "./deny-cache";
import type { DecisionMetrics, MetricOutcome } from "./metrics";
import {
  KEY_PREFIX_LENGTH,
  KeyIndexMissingError,
  sha256KeyHash,
  type AccuracyEvent,
  type KeyHasher,
  type KeyIndexPort,
  type UsageError,
  type UsageOutcome,
  type UsageSink,
} from "./ports";
import { denialOf, type Denial } from "./quota-denial";
import { StoreClock } from "./store-clock";

export interface DecisionRequest {
  /** The end client's API key (plaintext; hashed here, never stored). */
  key?: string;
  /** Or the tenant slug, when the caller already knows it. */
  tenant?: string;
  /** `METHOD /path` or an operation name. */
  operation: string;
  ip?: string;
  cost?: number;
  dryRun?: boolean;
  explain?: boolean;
  /** Keep what this decision commits refundable: an allowed answer then carries `reservationId` for POST /v1/settle. */
  reserve?: boolean;
}

/**
 * A request with every field present, in this order (the absent ones undefined). Every adapter
 * builds its requests with it: built field by field, requests had a hidden class per adapter and
 * per set of fields, and a server answering several kinds of request (checks with and without an
 * address, batches, gRPC descriptors) read every field of them through polymorphic lookups —
 * about 3 µs more CPU per decision on a single-check load than a server that saw only one kind.
 */
export function decisionRequest(r: DecisionRequest): DecisionRequest {
  return { key: r.key, tenant: r.tenant, operation: r.operation, ip: r.ip, cost: r.cost, dryRun: r.dryRun, explain: r.explain, reserve: r.reserve };
}

export interface EngineDeps {
  /** The policy document in force (null until one is loaded). */
  policy: () => CompiledPolicy | null;
  /** hash(key) → tenant slug: `peek` answers from the local cache (undefined: not cached),
   * `fetch` asks the index and throws when it cannot. */
  keyIndex: KeyIndexPort;
  /** How keys are hashed (default sha256 hex, the digest publish indexes by). */
  hashKey?: KeyHasher;
  store: CounterStore;
  /** The in-process store used by failure mode `local`. */
  localStore: CounterStore;
  /** Decision server replicas; `local` enforces limit / instances. */
  instances: number;
  storeTimeoutMs: number;
  breaker: CircuitBreaker;
  denyCache: DenyCache | null;
  usage: UsageSink | null;
  metrics: DecisionMetrics | null;
  /** Counts denials for the log, one line per reason per interval (null: not logged). */
  denials?: DenialLog | null;
  /** Local clock (ms), for timeouts, the deny cache and latency; never for counters. */
  now?: () => number;
  /** The accuracy meter's sample of approximate-limit subjects (SLUICE_ACCURACY_SAMPLE; 0 or absent: off). */
  accuracySample?: number;
}

/** How long a fail-closed operation waits for the store before answering 503 (see budgetFor). */
export function closedWaitMs(storeTimeoutMs: number): number {
  return Math.max(storeTimeoutMs * 4, 100);
}

/** How many API keys' hashes an engine remembers (about 100 bytes each). */
const KEY_HASH_CACHE_SIZE = 20_000;

export class NotReadyError extends Error {
  constructor() {
    super("no policy loaded yet");
  }
}


export class DecisionEngine {
  private readonly now: () => number;
  private readonly hashKey: KeyHasher;
  /** The store's clock, for every time-dependent choice made here (lib/decision/store-clock.ts). */
  private readonly clock: StoreClock;

  constructor(private readonly deps: EngineDeps) {
    // performance.timeOrigin is a getter that does work on every read: read once.
    const origin = performance.timeOrigin;
    this.now = deps.now ?? (() => origin + performance.now());
    this.hashKey = deps.hashKey ?? sha256KeyHash;
    this.clock = new StoreClock(this.now);
  }

  /** The store's time now (ms), as this engine estimates it: for the local store of failure mode `local`. */
  storeNowMs(): number {
    return this.clock.now();
  }

  /** Reads the store's clock once (at start, and now and then when idle); never throws. */
  async syncClock(): Promise<void> {
    try {
      const d = await this.deps.store.check([], { cost: 1, dryRun: true, timeoutMs: 1_000 });
      this.clock.observe(d.nowMs);
    } catch {
      // the next store answer corrects it
    }
  }

  /** Decides one request. Throws NotReadyError before a policy is loaded; never for a denial. */
  async decide(req: DecisionRequest): Promise<DecisionAnswer> {
    const startedMs = this.now();
    const doc = this.deps.policy();
    if (!doc) throw new NotReadyError();
    const op = this.operationOf(doc, req.operation);
    const operation = op?.name ?? "*";
    const cost = req.cost ?? op?.cost ?? 1;
    const failureMode: FailureMode = op?.failureMode ?? doc.defaults.failureMode;
    const ctx: AnswerContext = { tenant: null, tier: null, operation, policyVersion: doc.version };
    const dryRun = req.dryRun === true;
    const explain = req.explain === true;

    let keyHash: string | null = null;
    let slug: string | null = null;
    if (req.key !== undefined) {
      keyHash = this.keyHashOf(req.key);
      const hit = this.deps.keyIndex.peek(keyHash);
      if (hit !== undefined) {
        this.deps.metrics?.cacheHit("key");
        slug = hit;
      } else {
        // Unresolvable: under `local` the key is still counted, against every tier's rows at once
        // (planUnresolvedChecks); `open` and `closed` need no checks.
        const unresolved = () => (failureMode === "local" ? planUnresolvedChecks(doc, operation, keyHash, req.ip ?? null, this.keyPrefix) : null);
        if (!this.deps.breaker.allow(startedMs)) {
          return this.failurePath(ctx, failureMode, unresolved(), keyHash, cost, dryRun, startedMs, "breaker_open");
        }
        try {
          const fetched = this.deps.keyIndex.fetch(keyHash);
          slug = await withTimeout(fetched, this.budgetFor(failureMode), () => new StoreTimeoutError());
          this.deps.breaker.success(this.now());
        } catch (error) {
          const kind = error instanceof KeyIndexMissingError ? this.indexMissing(startedMs) : this.storeFailed(error, startedMs);
          return this.failurePath(ctx, failureMode, unresolved(), keyHash, cost, dryRun, startedMs, kind);
        }
      }
    } else {
      slug = req.tenant ?? null;
    }

    // Override expiry on the store's clock, not this server's (which may be off).
    const effective = slug === null ? null : limitsFor(doc, slug, operation, this.clock.now(startedMs));
    if (!effective) return this.finish(plainAnswer(ctx, 401, "unknown_key"), keyHash, startedMs, dryRun, null, null, null, cost);
    ctx.tenant = effective.tenant.slug;
    ctx.tier = effective.tier.name;
    if (effective.tenant.status === "suspended") {
      return this.finish(plainAnswer(ctx, 403, "tenant_suspended"), keyHash, startedMs, dryRun, null, null, null, cost);
    }

    const planned = planChecks({ effective, keyHash, ip: req.ip ?? null, accuracySample: this.deps.accuracySample, prefix: this.keyPrefix });
    const checks = planned.map((p) => p.check);
    if (checks.length === 0) {
      const answer = plainAnswer(ctx, 200, "ok");
      if (dryRun) answer.dryRun = true;
      if (explain) answer.checks = [];
      return this.finish(answer, keyHash, startedMs, dryRun, null, null, null, cost);
    }

    // Explain answers list every counter as the store sees it: those always ask the store.
    const cached = explain ? null : (this.deps.denyCache?.decide(checks, cost, startedMs) ?? null);
    if (cached) {
      this.deps.metrics?.cacheHit("deny");
      const answer = answerFromStore(ctx, cached, planned, { explain, dryRun });
      return this.finish(answer, keyHash, startedMs, dryRun, null, denialOf(cached, planned), null, cost);
    }

    if (!this.deps.breaker.allow(startedMs)) {
      return this.failurePath(ctx, failureMode, planned, keyHash, cost, dryRun, startedMs, "breaker_open", explain);
    }
    let decision: StoreDecision;
    try {
      decision = await this.deps.store.check(checks, { cost, dryRun, reserve: req.reserve === true, timeoutMs: this.budgetFor(failureMode) });
    } catch (error) {
      const kind = this.storeFailed(error, startedMs);
      return this.failurePath(ctx, failureMode, planned, keyHash, cost, dryRun, startedMs, kind, explain);
    }
    // One reading of the local clock for the breaker, the store-clock estimate and the latency.
    const answeredMs = this.now();
    this.deps.breaker.success(answeredMs);
    this.clock.observe(decision.nowMs, answeredMs);
    this.deps.denyCache?.observe(checks, decision, cost, startedMs);
    const answer = answerFromStore(ctx, decision, planned, { explain, dryRun, reservationId: decision.reservationId });
    const accuracy = this.deps.accuracySample ? accuracyOf(decision, planned) : null;
    return this.finish(answer, keyHash, startedMs, dryRun, decision.nowMs, denialOf(decision, planned), accuracy, cost, answeredMs);
  }

  /**
   * The hash of an API key, remembered for the keys seen lately (bounded: dropped whole past
   * KEY_HASH_CACHE_SIZE, then refilled by the keys still in use): a client sends its key on every
   * request, and the digest is the same every time.
   */
  private readonly keyHashes = new Map<string, string>();
  private keyHashOf(key: string): string {
    let hash = this.keyHashes.get(key);
    if (hash === undefined) {
      hash = this.hashKey(key);
      if (this.keyHashes.size >= KEY_HASH_CACHE_SIZE) this.keyHashes.clear();
      this.keyHashes.set(key, hash);
    }
    return hash;
  }

  /** resolveOperation, remembered per policy document for the request strings seen (bounded). */
  private opDoc: CompiledPolicy | null = null;
  /** SLUICE_REDIS_PREFIX, as read when the document in force was first seen. */
  private keyPrefix = redisPrefix();
  private readonly opCache = new Map<string, ReturnType<typeof resolveOperation>>();
  private operationOf(doc: CompiledPolicy, request: string): ReturnType<typeof resolveOperation> {
    if (this.opDoc !== doc) {
      this.opDoc = doc;
      this.opCache.clear();
      // Read once per document, not per decision: process.env is slow to read.
      this.keyPrefix = redisPrefix();
    }
    let op = this.opCache.get(request);
    if (op === undefined) {
      op = resolveOperation(doc, request);
      if (this.opCache.size >= 10_000) this.opCache.clear();
      this.opCache.set(request, op);
    }
    return op;
  }

  /**
   * Frees a concurrency lease (or several, comma-separated as the answer gives them). Rejects with
   * ForgedLeaseError, after freeing the others, when an id names other units than its lease holds.
   */
  async release(leaseId: string): Promise<boolean> {
    let any = false;
    let forged: ForgedLeaseError | null = null;
    const releaseIn = (store: CounterStore, id: string) =>
      store.release(id).catch((error: unknown) => {
        if (error instanceof ForgedLeaseError) forged = error;
        return false;
      });
    for (const id of leaseId.split(",")) {
      if (id === "") continue;
      const freed = await withTimeout(releaseIn(this.deps.store, id), this.deps.storeTimeoutMs * 4, () => new StoreTimeoutError()).catch(() => false);
      // A lease taken on failure mode `local` lives in the in-process store.
      if (freed) any = true;
      else if (forged === null) any = (await releaseIn(this.deps.localStore, id)) || any;
    }
    if (forged !== null) throw forged;
    return any;
  }

  /**
   * Gives back the unused part of a reservation (POST /v1/settle; lib/store/types.ts SettleResult).
   * Only the counter store holds reservations: a degraded answer never carried one. Throws
   * StoreTimeoutError when the store does not answer within 4 × the budget (the settle may have
   * run: a retry with the same actual cost replays it).
   */
  settle(reservationId: string, actualCost: number): Promise<SettleResult> {
    return withTimeout(this.deps.store.settle(reservationId, actualCost), closedWaitMs(this.deps.storeTimeoutMs), () => new StoreTimeoutError());
  }

  /**
   * The store budget of one round trip (REDIS_TIMEOUT_MS), measured by the store from when the
   * command is sent (CheckOptions.timeoutMs): it measures the store being slow or down, never
   * this server's own queue. Fail-open and local operations trade accuracy for availability past
   * it; a fail-closed one gains nothing from giving up early (its fallback is a 503), so it waits
   * for the answer up to 4 × the budget (at least 100 ms), and a healthy Redis behind a busy
   * machine does not turn it into 503s.
   */
  private budgetFor(failureMode: FailureMode): number {
    return failureMode === "closed" ? closedWaitMs(this.deps.storeTimeoutMs) : this.deps.storeTimeoutMs;
  }

  /** The store answered, without the key index (it lost it): a store error to report, not a breaker failure. */
  private indexMissing(startedMs: number): UsageError {
    this.deps.breaker.success(this.now());
    this.deps.metrics?.redisErrors.inc({ kind: "error" });
    this.deps.usage?.recordError(startedMs, "redis_error");
    return "redis_error";
  }

  private storeFailed(error: unknown, startedMs: number): UsageError {
    const kind: UsageError = error instanceof StoreTimeoutError ? "redis_timeout" : "redis_error";
    this.deps.breaker.failure(this.now());
    this.deps.metrics?.redisErrors.inc({ kind: kind === "redis_timeout" ? "timeout" : "error" });
    this.deps.usage?.recordError(this.clock.now(startedMs), kind);
    return kind;
  }

  private async failurePath(
    ctx: AnswerContext,
    failureMode: FailureMode,
    planned: PlannedCheck[] | null,
    keyHash: string | null,
    cost: number,
    dryRun: boolean,
    startedMs: number,
    cause: UsageError,
    explain = false,
  ): Promise<DecisionAnswer> {
    if (cause === "breaker_open") {
      this.deps.metrics?.redisErrors.inc({ kind: "breaker_open" });
      this.deps.usage?.recordError(this.clock.now(startedMs), "breaker_open");
    }
    if (failureMode === "closed") {
      return this.finish(plainAnswer(ctx, 503, "store_unavailable"), keyHash, startedMs, dryRun, null, null, null, cost);
    }
    if (failureMode === "local" && planned !== null) {
      const checks: LimitCheck[] = localShare(
        planned.map((p) => p.check),
        this.deps.instances,
      );
      try {
        const decision = await this.deps.localStore.check(checks, { cost, dryRun });
        const localPlanned = planned.map(({ policyHeader: _full, ...p }, i) => ({ ...p, check: checks[i]! }));
        const answer = answerFromStore(ctx, decision, localPlanned, { explain, dryRun, degraded: true });
        return this.finish(answer, keyHash, startedMs, dryRun, null, denialOf(decision, localPlanned), null, cost);
      } catch {
        // The in-process store failing is a bug; fall through to fail open rather than 5xx.
      }
    }
    const answer = plainAnswer(ctx, 200, "ok");
    answer.degraded = true;
    if (dryRun) answer.dryRun = true;
    return this.finish(answer, keyHash, startedMs, dryRun, null, null, null, cost);
  }

  private finish(
    answer: DecisionAnswer,
    keyHash: string | null,
    startedMs: number,
    dryRun: boolean,
    storeNowMs: number | null,
    /** The check that denied it (lib/decision/quota-denial.ts): its limit name for the dashboards'
     * 429s by limit, its quota for billing's "denied for quota". */
    denied: Denial | null = null,
    /** What the accuracy meter saw on this decision's sampled checks (null: none sampled). */
    accuracy: AccuracyEvent[] | null = null,
    /** The decision's cost: the units a passed decision takes from every quota (and counter) it checks. */
    cost = 1,
    /** When it was decided (local clock), if the caller has just read it. */
    decidedMs = this.now(),
  ): DecisionAnswer {
    const latencyMs = decidedMs - startedMs;
    let outcome: UsageOutcome;
    if (!answer.allowed) {
      outcome = "denied";
      if (!dryRun) this.deps.denials?.record(answer);
    } else if (answer.degraded) outcome = "degraded";
    else if (answer.shadowDenied) outcome = "shadow_denied";
    else outcome = "allowed";
    const metricOutcome: MetricOutcome = answer.status === 503 ? "unavailable" : outcome;
    const m = this.deps.metrics;
    if (m) {
      m.recordDecision(metricOutcome, answer.tier ?? "_", answer.operation ?? "*", latencyMs / 1000);
      if (accuracy) for (const a of accuracy) m.recordAccuracy(answer.tier ?? "_", a);
    }
    if (!dryRun && this.deps.usage) {
      this.deps.usage.record({
        atMs: storeNowMs ?? this.clock.now(startedMs),
        tenant: answer.tenant,
        tier: answer.tier,
        operation: answer.operation,
        outcome,
        // Only keys of a known tenant: random unknown keys must not grow the hash without bound.
        keyPrefix: keyHash === null || answer.tenant === null ? null : keyHash.slice(0, KEY_PREFIX_LENGTH),
        latencyMs,
        deniedQuota: denied?.quota ?? null,
        deniedLimit: denied?.limit ?? null,
        // Every field present in every event (one shape for the recorder): absent is undefined.
        accuracy: accuracy ?? undefined,
        units: outcome !== "denied" && cost !== 1 ? cost : undefined,
      });
    }
    return answer;
  }
}

/** The sampled checks' accuracy samples, by limit name (null when the decision had none). */
function accuracyOf(decision: StoreDecision, planned: readonly PlannedCheck[]): AccuracyEvent[] | null {
  let out: AccuracyEvent[] | null = null;
  for (let i = 0; i < decision.outcomes.length; i++) {
    const a = decision.outcomes[i]!.accuracy;
    if (a) (out ??= []).push({ limit: planned[i]!.name, limitAdmitted: a.limitAdmitted, exactAdmitted: a.exactAdmitted });
  }
  return out;
}
