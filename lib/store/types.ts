/**
 * The counter store port: one decision's checks in, all answers out, all-or-nothing. The Redis store
 * (./redis) and the memory store (./memory.ts) pass the same cases (./testing/conformance.ts).
 */
import type { AlgorithmLimit, LimitOutcome } from "../policy/algorithms/types";
import type { Algorithm } from "../policy/types";

/**
 * T with every field present (an optional one as undefined): a field added to T that a builder does
 * not carry is a type error, and each hot object of the decision path keeps one hidden class.
 */
export type Complete<T> = { [K in keyof Required<T>]: T[K] };

/** One counter to check for one decision: the limit's numbers (AlgorithmLimit, all in ms) plus where and what. */
export interface LimitCheck extends AlgorithmLimit {
  /** Full counter key, hash tag included (lib/redis/keys.ts builds it). Windowed keys get suffixes. */
  key: string;
  kind: "limit" | "quota" | "global";
  /** For quotas, the algorithm is a calendar fixed window: `period` says which. */
  algorithm: Algorithm | "quota";
  /** Weighted fair share of a global cap: this tenant's tier weight and its member id. */
  fairShare?: { weight: number; member: string };
  /**
   * Sampled by the accuracy meter (lib/decision/accuracy.ts): the store keeps an exact log of the same
   * limit at `<key>:x` and reports in `accuracy` what it would have decided (not on a dry run).
   */
  exactLog?: true;
  /** `regions: shared` (docs/regions.md, lib/regions/replication.ts): what it admits is counted in the other regions too; fixed_window and sliding_window_counter only. */
  replicate?: true;
  /** DECIDE's limit string (checkSpec, lib/store/lua/wire.ts), made once per limit by the caller; absent: the Redis store makes it. */
  spec?: string;
}

/** What the accuracy meter saw for one sampled check. Admitted by X: X allowed it and so did every other check of the decision. */
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
   * The store budget (ms), from when the command is sent (./redis/deadline.ts). Past it, the check
   * rejects with {@link StoreTimeoutError}: the command may still run, never retry it. Undefined:
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
  /** Frees a concurrency lease: false when unknown or expired; ForgedLeaseError (./lease-id.ts), freeing nothing, when its id was changed. */
  release(leaseId: string): Promise<boolean>;
  /** Gives back the unused part of a reservation, once (see SettleResult). */
  settle(reservationId: string, actualCost: number): Promise<SettleResult>;
  close(): Promise<void>;
  /** Sends the checks queued for this event-loop turn now, not at its check phase (lib/store/redis/coalescer.ts); absent where nothing queues. */
  flush?(): void;
}
