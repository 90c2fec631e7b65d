/**
 * The decision engine, without HTTP (docs/semantics.md, docs/decision-api.md). One decision, top
 * to bottom in `decide`:
 * 1. the operation (`resolveOperation`, remembered per document) and the API key's tenant: the key
 *    index's local cache, else the index itself within the store budget;
 * 2. the plan: the tenant's limits and their checks (./decide.ts planDecision, pure);
 * 3. the outcome: the deny cache when it knows the store would deny, else the counter store (one
 *    round trip, through the circuit breaker);
 * 4. the answer and its accounting (./decide.ts answerDecision; metrics, usage, the denial log).
 *
 * Failure handling (docs/failure-modes.md): every store round trip has a budget (REDIS_TIMEOUT_MS,
 * 25 ms by default, measured from when the command is sent: see budgetFor). When the store fails,
 * times out or the breaker is open, the operation's failure mode decides (./failure-path.ts). A
 * store call that timed out is never retried: the script may have run, and a retry would count the
 * request twice.
 */
import { currentEnv } from "../env";
import type { CompiledPolicy } from "../policy/compiled";
import { resolveOperation } from "../policy/match";
import { withTimeout } from "../net/timeout";
import type { FailureMode } from "../policy/types";
import { ForgedLeaseError } from "../store/lease-id";
import { StoreTimeoutError, type Complete, type CounterStore, type SettleResult } from "../store/types";
import type { AnswerContext, DecisionAnswer } from "./answer";
import type { CircuitBreaker } from "./breaker";
import { planUnresolvedChecks, type PlannedCheck } from "./checks";
import { answerContext, answerDecision, type Decided, decidedWithout, planDecision } from "./decide";
import type { DenialLog } from "./denial-log";
import type { DenyCache } from "./deny-cache";
import { closedWaitMs, decideWithoutStore, indexMissing, storeFailed } from "./failure-path";
import type { DecisionMetrics, MetricOutcome } from "./metrics";
import { KEY_PREFIX_LENGTH, KeyIndexMissingError, sha256KeyHash, type KeyHasher, type KeyIndexPort, type UsageError, type UsageOutcome, type UsageSink } from "./ports";
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
 * A request with every field present, in this order (the absent ones undefined): every adapter's
 * requests share one hidden class. Built field by field, each kind of request had its own, and the
 * engine's polymorphic reads cost about 3 µs more CPU per decision on a single-check load.
 */
export function decisionRequest(r: DecisionRequest): Complete<DecisionRequest> {
  return { key: r.key, tenant: r.tenant, operation: r.operation, ip: r.ip, cost: r.cost, dryRun: r.dryRun, explain: r.explain, reserve: r.reserve };
}

export interface EngineDeps {
  /** The policy document in force (null until one is loaded). */
  policy: () => CompiledPolicy | null;
  /** The document that decides for a known tenant (PolicyPort.forTenant); absent, or null, means `policy()`. */
  policyFor?: (tenant: string) => CompiledPolicy | null;
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
  /** The counter keys' deployment prefix (default SLUICE_REDIS_PREFIX, read once here). */
  keyPrefix?: string;
}

/** How many API keys' hashes an engine remembers (about 100 bytes each). */
const KEY_HASH_CACHE_SIZE = 20_000;

export class NotReadyError extends Error {
  constructor() {
    super("no policy loaded yet");
  }
}

/** One decision under way: what its answer and accounting need. Every field set at the start (one hidden class). */
export interface DecisionRun {
  ctx: AnswerContext;
  failureMode: FailureMode;
  /** Units the request consumes on every counter (the request's, else the operation's, else 1). */
  cost: number;
  dryRun: boolean;
  explain: boolean;
  /** sha256 hex of the API key; null when the request named the tenant. */
  keyHash: string | null;
  /** Local clock (ms) when it arrived. */
  startedMs: number;
  /** The store's clock in its answer (null: decided without it). */
  storeNowMs: number | null;
  /** Local clock (ms) when the store answered (null: decided without it). */
  answeredMs: number | null;
}

export class DecisionEngine {
  private readonly now: () => number;
  private readonly hashKey: KeyHasher;
  /** The store's clock, for every time-dependent choice made here (lib/decision/store-clock.ts). */
  private readonly clock: StoreClock;
  private readonly keyPrefix: string;

  constructor(private readonly deps: EngineDeps) {
    // performance.timeOrigin is a getter that does work on every read: read once.
    const origin = performance.timeOrigin;
    this.now = deps.now ?? (() => origin + performance.now());
    this.hashKey = deps.hashKey ?? sha256KeyHash;
    this.clock = new StoreClock(this.now);
    this.keyPrefix = deps.keyPrefix ?? currentEnv("SLUICE_REDIS_PREFIX");
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
    const run: DecisionRun = {
      ctx: answerContext(doc.version, operation),
      failureMode: op?.failureMode ?? doc.defaults.failureMode,
      cost: req.cost ?? op?.cost ?? 1,
      dryRun: req.dryRun === true,
      explain: req.explain === true,
      keyHash: null,
      startedMs,
      storeNowMs: null,
      answeredMs: null,
    };
    const ip = req.ip ?? null;

    // 1. The tenant: named, or the API key's (the local cache, else the index).
    let tenant = req.tenant ?? null;
    if (req.key !== undefined) {
      const keyHash = (run.keyHash = this.keyHashOf(req.key));
      const hit = this.deps.keyIndex.peek(keyHash);
      if (hit !== undefined) {
        this.deps.metrics?.cacheHit("key");
        tenant = hit;
      } else {
        // Unresolvable: under `local` the key is still counted, against every tier's rows at once.
        const unresolved = () => (run.failureMode === "local" ? planUnresolvedChecks(doc, operation, keyHash, ip, this.keyPrefix) : null);
        if (!this.deps.breaker.allow(startedMs)) return this.failurePath(run, "breaker_open", unresolved());
        try {
          tenant = await withTimeout(this.deps.keyIndex.fetch(keyHash), this.budgetFor(run.failureMode), () => new StoreTimeoutError());
          this.deps.breaker.success(this.now());
        } catch (error) {
          const cause = error instanceof KeyIndexMissingError ? indexMissing(this.deps, this.now(), startedMs) : storeFailed(this.deps, error, this.now(), this.clock.now(startedMs));
          return this.failurePath(run, cause, unresolved());
        }
      }
    }

    // A guarded rollout's cohort is decided by the candidate version: its operation, failure mode and cost too.
    const decider = tenant !== null && this.deps.policyFor !== undefined ? (this.deps.policyFor(tenant) ?? doc) : doc;
    let decidingOperation = operation;
    if (decider !== doc) {
      const dop = this.operationOf(decider, req.operation);
      decidingOperation = dop?.name ?? "*";
      run.ctx = answerContext(decider.version, decidingOperation);
      run.failureMode = dop?.failureMode ?? decider.defaults.failureMode;
      run.cost = req.cost ?? dop?.cost ?? 1;
    }

    // 2. The plan (overrides expire on the store's clock, not this server's, which may be off).
    const plan = planDecision({
      doc: decider,
      policyVersion: decider.version,
      tenant,
      operation: decidingOperation,
      keyHash: run.keyHash,
      ip,
      nowMs: this.clock.now(startedMs),
      prefix: this.keyPrefix,
      accuracySample: this.deps.accuracySample,
      dryRun: run.dryRun,
      explain: run.explain,
    });
    if (!plan.needsStore) return this.finish(run, decidedWithout(plan.answer));
    run.ctx = plan.ctx;

    // 3. The outcome. Explain answers list every counter as the store sees it: those always ask it.
    const cached = run.explain ? null : (this.deps.denyCache?.decide(plan.checks, run.cost, startedMs) ?? null);
    if (cached) {
      this.deps.metrics?.cacheHit("deny");
      return this.finish(run, answerDecision(run, cached, plan.planned));
    }
    if (!this.deps.breaker.allow(startedMs)) return this.failurePath(run, "breaker_open", plan.planned);
    let decision;
    const epoch = this.deps.denyCache?.epoch ?? 0;
    try {
      decision = await this.deps.store.check(plan.checks, { cost: run.cost, dryRun: run.dryRun, reserve: req.reserve === true, timeoutMs: this.budgetFor(run.failureMode) });
    } catch (error) {
      return this.failurePath(run, storeFailed(this.deps, error, this.now(), this.clock.now(startedMs)), plan.planned);
    }
    // One reading of the local clock for the breaker, the store-clock estimate and the latency.
    const answeredMs = (run.answeredMs = this.now());
    run.storeNowMs = decision.nowMs;
    this.deps.breaker.success(answeredMs);
    this.clock.observe(decision.nowMs, answeredMs);
    this.deps.denyCache?.observe(plan.checks, decision, run.cost, startedMs, epoch);

    // 4. The answer.
    return this.finish(run, answerDecision(run, decision, plan.planned, { reservationId: decision.reservationId, metered: this.deps.accuracySample !== undefined && this.deps.accuracySample > 0 }));
  }

  /** A client sends its key on every request: its hash is remembered (dropped whole past KEY_HASH_CACHE_SIZE). */
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

  /**
   * resolveOperation, remembered per request string for each of the last two documents: a guarded
   * rollout decides with two at once, and one cache would be emptied at every switch between them.
   */
  private opDoc: CompiledPolicy | null = null;
  private opCache = new Map<string, ReturnType<typeof resolveOperation>>();
  private opDocOther: CompiledPolicy | null = null;
  private opCacheOther = new Map<string, ReturnType<typeof resolveOperation>>();
  private operationOf(doc: CompiledPolicy, request: string): ReturnType<typeof resolveOperation> {
    if (this.opDoc !== doc) {
      // Swap in the other document's cache, or start a fresh one for a new document.
      const [otherDoc, otherCache] = [this.opDocOther, this.opCacheOther];
      this.opDocOther = this.opDoc;
      this.opCacheOther = this.opCache;
      this.opDoc = doc;
      this.opCache = otherDoc === doc ? otherCache : new Map();
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
    const forged: ForgedLeaseError[] = [];
    const releaseIn = (store: CounterStore, id: string) =>
      store.release(id).catch((error: unknown) => {
        if (error instanceof ForgedLeaseError) forged.push(error);
        return false;
      });
    for (const id of leaseId.split(",")) {
      if (id === "") continue;
      const before = forged.length;
      const freed = await withTimeout(releaseIn(this.deps.store, id), this.deps.storeTimeoutMs * 4, () => new StoreTimeoutError()).catch(() => false);
      // A lease taken on failure mode `local` lives in the in-process store.
      if (freed) any = true;
      else if (forged.length === before) any = (await releaseIn(this.deps.localStore, id)) || any;
    }
    if (forged.length > 0) throw forged[0];
    return any;
  }

  /**
   * Gives back the unused part of a reservation (POST /v1/settle); only the counter store holds them.
   * Throws StoreTimeoutError past closedWaitMs: the settle may have run, a retry with the same cost replays it.
   */
  settle(reservationId: string, actualCost: number): Promise<SettleResult> {
    return withTimeout(this.deps.store.settle(reservationId, actualCost), closedWaitMs(this.deps.storeTimeoutMs), () => new StoreTimeoutError());
  }

  /**
   * Fail-open and local operations trade accuracy for availability past the budget; a fail-closed one
   * gains nothing from giving up early (its fallback is a 503), so it waits closedWaitMs, and a healthy
   * Redis behind a busy machine does not turn it into 503s.
   */
  private budgetFor(failureMode: FailureMode): number {
    return failureMode === "closed" ? closedWaitMs(this.deps.storeTimeoutMs) : this.deps.storeTimeoutMs;
  }

  /** The answer without the counter store, by the operation's failure mode (`planned`: the checks for `local`). */
  private async failurePath(run: DecisionRun, cause: UsageError, planned: readonly PlannedCheck[] | null): Promise<DecisionAnswer> {
    return this.finish(run, await decideWithoutStore(this.deps, run, cause, planned, this.clock.now(run.startedMs)));
  }

  /** Counts a decision (metrics, usage, the denial log) and returns its answer. */
  private finish(run: DecisionRun, { answer, denied, accuracy }: Decided): DecisionAnswer {
    const latencyMs = (run.answeredMs ?? this.now()) - run.startedMs;
    let outcome: UsageOutcome;
    if (!answer.allowed) {
      outcome = "denied";
      if (!run.dryRun) this.deps.denials?.record(answer);
    } else if (answer.degraded) outcome = "degraded";
    else if (answer.shadowDenied) outcome = "shadow_denied";
    else outcome = "allowed";
    const metricOutcome: MetricOutcome = answer.status === 503 ? "unavailable" : outcome;
    const m = this.deps.metrics;
    if (m) {
      m.recordDecision(metricOutcome, answer.tier ?? "_", answer.operation ?? "*", latencyMs / 1000, answer.allowed ? null : answer.reason);
      m.recordVersion(answer.policyVersion, metricOutcome);
      if (accuracy) for (const a of accuracy) m.recordAccuracy(answer.tier ?? "_", a);
    }
    if (!run.dryRun && this.deps.usage) {
      this.deps.usage.record({
        atMs: run.storeNowMs ?? this.clock.now(run.startedMs),
        tenant: answer.tenant,
        tier: answer.tier,
        operation: answer.operation,
        outcome,
        // Only keys of a known tenant: random unknown keys must not grow the hash without bound.
        keyPrefix: run.keyHash === null || answer.tenant === null ? null : run.keyHash.slice(0, KEY_PREFIX_LENGTH),
        latencyMs,
        deniedQuota: denied?.quota ?? null,
        deniedLimit: denied?.limit ?? null,
        deniedReason: outcome === "denied" ? answer.reason : null,
        // Every field present in every event (one shape for the recorder): absent is undefined.
        accuracy: accuracy ?? undefined,
        units: outcome !== "denied" && run.cost !== 1 ? run.cost : undefined,
      });
    }
    return answer;
  }
}
