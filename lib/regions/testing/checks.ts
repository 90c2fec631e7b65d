import type { LimitCheck } from "../../store/types";

/** A `regions: shared` fixed-window limit check on `key` (100 per 4 s unless `over` says otherwise). */
export function replicatedCheck(key: string, over: Partial<LimitCheck> = {}): LimitCheck {
  return {
    key,
    kind: "limit",
    algorithm: "fixed_window",
    limit: 100,
    windowMs: 4_000,
    burst: 100,
    precision: 1,
    mode: "reject",
    maxDelayMs: 0,
    leaseTtlMs: 0,
    replicate: true,
    ...over,
  };
}
