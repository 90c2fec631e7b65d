/**
 * A check's limit as DECIDE reads it (lib/store/lua/decide.ts, parsed by `spec` in
 * lib/store/lua/prelude.ts): one ARGV string, 14 fields joined by `|` (none of them can hold a `|`:
 * numbers, enum words, a tenant slug, a hex lease token). One string instead of 13 arguments keeps
 * the command short to encode and send, and Redis parses each distinct limit once per call.
 *
 * Pure, so whoever builds checks in bulk (lib/decision/checks.ts, once per plan row) can make it
 * once and put it in `LimitCheck.spec`; the Redis store makes it itself when a check has none.
 */
import type { LimitCheck } from "./types";

export function checkSpec(check: Omit<LimitCheck, "key" | "spec">, leaseToken: string): string {
  const share = check.fairShare;
  return `${check.algorithm}|${check.limit}|${check.windowMs}|${check.burst}|${check.precision}|${check.mode}|${check.maxDelayMs}|${check.leaseTtlMs}|${check.period ?? "month"}|${check.overage ?? "block"}|${share ? share.weight : 0}|${share ? share.member : ""}|${leaseToken}|${check.exactLog ? "1" : ""}|`;
}
