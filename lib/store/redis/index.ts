/**
 * The Redis counter store: each decision's checks in one atomic DECIDE (../lua/decide.ts), Redis
 * TIME as the clock, every TTL set in the same call. A decision goes through ./coalescer.ts (or
 * ./cluster.ts), ./codec.ts, ./loader.ts, ./deadline.ts, then ./codec.ts (docs/architecture.md).
 */
import type { RedisClient } from "../../redis/client";
import { withTimeout } from "../../net/timeout";
import { luaParts } from "../lua/decide";
import { FLAG } from "../lua/wire";
import { StoreTimeoutError, type CheckOptions, type CounterStore, type LimitCheck, type StoreDecision } from "../types";
import { checkAcrossSlots, type ClusterDeps, spansSlots } from "./cluster";
import { createCoalescer } from "./coalescer";
import { decodeDecide, type DecisionInput, type DecisionResult, encodeDecide, type Reply } from "./codec";
import { createLeases } from "./leases";
import { createLoader, isCluster, type ScriptStats } from "./loader";
import { createReservations } from "./reservations";

export { hashTag } from "./cluster";

export interface RedisStoreOptions {
  /** TESTS ONLY: replaces Redis TIME inside the scripts (ARG.now) so parity tests can replay scenarios; keys then live 60 s longer. */
  testClock?: () => number;
  /** The longest a decision with a budget waits while Redis keeps answering (ms, default 1,000; ./deadline.ts). */
  maxWaitMs?: number;
}

export interface RedisCounterStore extends CounterStore {
  scriptStats(): ScriptStats;
}

export function createRedisStore(redis: RedisClient, options: RedisStoreOptions = {}): RedisCounterStore {
  const testClock = options.testClock;
  const nowArg = testClock ? () => String(testClock()) : () => "";
  const loader = createLoader(redis);
  const leases = createLeases(loader, nowArg);
  const reservations = createReservations(redis, loader, nowArg, testClock !== undefined);

  async function call(batch: readonly DecisionInput[]): Promise<(DecisionResult | Error)[]> {
    const { keys, args } = encodeDecide(batch, nowArg());
    const reply = await loader.decide(keys, args, () => luaParts(batch.flatMap((d) => d.checks)));
    return decodeDecide(reply as Reply, batch);
  }
  async function decideAlone(checks: readonly LimitCheck[], cost: number, flags: number): Promise<DecisionResult> {
    const [result] = await call([{ checks, cost, flags }]);
    if (result instanceof Error) throw result;
    return result!;
  }
  // Coalescing needs one call to stay within one hash slot: standalone Redis only.
  const coalescer = isCluster(redis) ? null : createCoalescer({ call, late: leases.giveBack, maxWaitMs: options.maxWaitMs ?? 1_000 });
  const cluster: ClusterDeps = { decide: decideAlone, loader, reservations };

  /** Everything but the usual call: the clock alone, a Redis Cluster, a reservation to record. */
  async function checkOther(checks: readonly LimitCheck[], { cost, dryRun, timeoutMs, reserve = false }: CheckOptions): Promise<StoreDecision> {
    // A reply after the budget still gives back the leases it took.
    const budget = <T extends StoreDecision>(p: Promise<T>): Promise<T> => {
      if (timeoutMs === undefined) return p;
      let timedOut = false;
      p.then((result) => timedOut && leases.giveBack(result), () => undefined);
      return withTimeout(p, timeoutMs, () => {
        timedOut = true;
        return new StoreTimeoutError();
      });
    };
    if (checks.length === 0) {
      if (testClock) return { nowMs: testClock(), allowed: true, outcomes: [] };
      const time = redis.time();
      const [s, us] = timeoutMs === undefined ? await time : await withTimeout(time, timeoutMs, () => new StoreTimeoutError());
      return { nowMs: Number(s) * 1000 + Math.floor(Number(us) / 1000), allowed: true, outcomes: [] };
    }
    // Several round trips under one budget (a timeout mid-way leaves global units counted: erring on the side of limiting).
    if (isCluster(redis) && spansSlots(checks)) return budget(checkAcrossSlots(cluster, checks, cost, dryRun, reserve));
    const wantUndo = reserve && !dryRun;
    const flags = (dryRun ? FLAG.dryRun : 0) | (wantUndo ? FLAG.undo : 0);
    const { nowMs, allowed, outcomes, undo } = coalescer ? await coalescer.submit(checks, cost, flags, timeoutMs) : await budget(decideAlone(checks, cost, flags));
    if (allowed && wantUndo) return { nowMs, allowed, outcomes, reservationId: await reservations.record(nowMs, cost, undo) };
    return { nowMs, allowed, outcomes };
  }

  return {
    check(checks, options) {
      // The usual call on a standalone Redis: the turn's DECIDE result is the answer, no promise around it.
      if (coalescer && checks.length > 0 && !(options.reserve === true && !options.dryRun)) {
        return coalescer.submit(checks, options.cost, options.dryRun ? FLAG.dryRun : 0, options.timeoutMs);
      }
      return checkOther(checks, options);
    },
    flush: () => coalescer?.flush(),
    release: leases.release,
    settle: reservations.settle,
    scriptStats: () => ({ ...loader.stats }),
    // The client is the caller's (shared by the decision server): nothing of ours to close.
    close: async () => undefined,
  };
}
