/**
 * The counter store port: one decision's full list of checks in, all answers out, all-or-nothing.
 * Implemented by the Redis store (one Lua script, Redis server time) and the in-process memory
 * store (the pure algorithms over a Map). `lib/store/testing/conformance.ts` holds the cases both must pass.
 */
import type { AlgorithmLimit, LimitOutcome } from "../policy/algorithms/types";
import type { Algorithm } from "../policy/types";

export type CheckKind = "limit" | "quota" | "global";

/**
 * T with every field present, an optional one as undefined when absent. A builder typed with it
 * must name every field, so a field added to T that the builder does not carry is a type error, not
 * a value that silently vanishes on the way. The hot objects of the decision path are built so
 * (lib/decision/checks.ts limitCheck, lib/decision/engine.ts decisionRequest): one hidden class each.
 */
export type Complete<T> = { [K in keyof Required<T>]: T[K] };

/** One counter to check for one decision: the limit's numbers (AlgorithmLimit, all in ms) plus where and what. */
export interface LimitCheck extends AlgorithmLimit {
  /** Full counter key, hash tag included (lib/redis/keys.ts builds it). Windowed keys get suffixes. */
  key: string;
  kind: CheckKind;
  /** For quotas, the algorithm is a calendar fixed window: `period` says which. */
  algorithm: Algorithm | "quota";
  /** Weighted fair share of a global cap: this tenant's tier weight and its member id. */
  fairShare?: { weight: number; member: string };
  /**
   * The live accuracy meter samples this subject (lib/decision/accuracy.ts): the store also keeps
   * an exact sliding-window log of `limit` per `windowMs` beside the counter (key `<key>:x`) and
   * reports in `accuracy` what that log would have decided. Never set on a dry run's checks' behalf:
   * a dry run records nothing.
   */
  exactLog?: true;
  /**
   * `regions: shared` (docs/regions.md): what this check admits is also counted in the other
   * regions' counters of the same window (lib/regions/replication.ts). Only fixed_window and
   * sliding_window_counter checks carry it (the policy file refuses the others).
   */
  replicate?: true;
  /**
   * The limit string DECIDE takes (checkSpec in lib/store/lua/wire.ts), when the caller made it
   * once for every check of this limit (a concurrency check's never: each carries its own lease
   * token). Absent: the Redis store makes it.
   */
  spec?: string;
}

/**
 * What the accuracy meter saw for one sampled check of a decision that was not a dry run. A
 * request counts as admitted by X when X allowed it and every other check of the decision allowed
 * it too (all-or-nothing: a request another check denies is admitted by neither).
 */
export interface AccuracySample {
  /** The limit itself admitted it (its own verdict, shadow mode included). */
  limitAdmitted: boolean;
  /** An exact sliding-window log of the same limit and window would have admitted it. */
  exactAdmitted: boolean;
}

export interface CheckOptions {
  /** Units this request consumes on every counter (≥ 1). */
  cost: number;
  /** Evaluate without consuming anything. */
  dryRun: boolean;
  /** Keep what this decision commits refundable: a committed decision then has a `reservationId` for `settle`. */
  reserve?: boolean;
  /**
   * The store budget of this decision (ms): how long the store may take to answer once the
   * command is on its way — time the decision waited inside this process before that does not
   * count, nor a reply that had arrived but was not read yet. Past it the check rejects with
   * {@link StoreTimeoutError} (the command may still run: never retry it). Undefined: no budget;
   * only the connection's own command timeout ends the wait.
   */
  timeoutMs?: number;
}

/** The store did not answer within the decision's budget (CheckOptions.timeoutMs). */
export class StoreTimeoutError extends Error {
  constructor() {
    super("store timeout");
    this.name = "StoreTimeoutError";
  }
}

/** The answer for one check (times absolute, store clock, ms), with the accuracy meter's sample. */
export interface CheckOutcome extends LimitOutcome {
  /** Checks with `exactLog`, on decisions that were not dry runs. */
  accuracy?: AccuracySample;
}

export interface StoreDecision {
  /** The store's clock at decision time (Redis TIME for the Redis store). */
  nowMs: number;
  /** True iff every non-shadow check allowed; then (unless dryRun) every check consumed `cost`. */
  allowed: boolean;
  /** One outcome per check, in the order given. */
  outcomes: CheckOutcome[];
  /** With `reserve`, on a decision that committed something: what `settle` takes (lib/store/reservation.ts). */
  reservationId?: string;
}

/**
 * `settle`: `settled` refunded `refunded = max(0, reservedCost − actualCost)` units on every
 * counter the reservation committed; `replayed` it had been settled with this actual cost already
 * (nothing more refunded); `conflict` it had been settled with another one (`actualCost` is that
 * one); `unknown` no such reservation, or older than RESERVATION_TTL_MS.
 */
export interface SettleResult {
  status: "settled" | "replayed" | "conflict" | "unknown";
  reservedCost: number;
  actualCost: number;
  refunded: number;
}

export interface CounterStore {
  check(checks: readonly LimitCheck[], options: CheckOptions): Promise<StoreDecision>;
  /**
   * Frees a concurrency lease; false when it was unknown or already expired. Rejects with
   * ForgedLeaseError (lib/store/lease-id.ts), freeing nothing, when the id names other units than
   * its lease was granted.
   */
  release(leaseId: string): Promise<boolean>;
  /** Gives back the unused part of a reservation, once (see SettleResult). */
  settle(reservationId: string, actualCost: number): Promise<SettleResult>;
  close(): Promise<void>;
  /**
   * Sends the checks this store has queued for the current event-loop turn now rather than at its
   * check phase (the Redis store's coalescer, lib/store/redis/coalescer.ts); absent where nothing
   * is queued. The gRPC server calls it after starting a turn's calls (#27).
   */
  flush?(): void;
}
