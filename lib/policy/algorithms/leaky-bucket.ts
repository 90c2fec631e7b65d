/**
 * leaky_bucket: a queue of size `burst` draining at `limit / window`. Seen as a meter it is the
 * token bucket (GCRA) read the other way round, so it shares token-bucket.ts:
 * - policing (mode reject / shadow): a request passes iff it fits in the queue now;
 * - shaping (mode delay): a request that fits within `maxDelayMs` passes with `delayMs`, the wait
 *   until its turn; beyond `maxDelayMs` it is denied, and `retryAfterMs` is the wait after which
 *   it would fit with exactly `maxDelayMs` of delay.
 */
import { tokenBucket, type BucketState } from "./token-bucket";
import type { AlgorithmContext, AlgorithmLimit, AlgorithmResult } from "./types";

export function leakyBucket(
  state: BucketState | undefined,
  limit: AlgorithmLimit,
  ctx: AlgorithmContext,
): AlgorithmResult<BucketState> {
  return tokenBucket(state, limit, ctx);
}
