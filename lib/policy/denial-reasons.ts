/**
 * Why decisions are denied, as the decision API names it (docs/decision-api.md), with the HTTP
 * status each reason answers and the words the control plane shows for it. The dashboards, the
 * usage API and the alerts group denials by these: a "429 share" counts the 429 reasons only; a
 * 401, 403 or 503 is its own series.
 */
import { REASONS, type Reason } from "./types";

export type DenialReason = Exclude<Reason, "ok">;
export const DENIAL_REASONS = REASONS.filter((r): r is DenialReason => r !== "ok");

export const DENIAL_STATUS: Record<DenialReason, 401 | 403 | 429 | 503> = {
  rate_limited: 429,
  quota_exhausted: 429,
  concurrency_limited: 429,
  cost_exceeds_limit: 429,
  unknown_key: 401,
  tenant_suspended: 403,
  store_unavailable: 503,
};

/** The reasons answered 429: what a "429 share" counts. */
export const REASONS_429 = DENIAL_REASONS.filter((r) => DENIAL_STATUS[r] === 429);

/** On screen, in words. */
export const DENIAL_REASON_LABELS: Record<DenialReason, string> = {
  rate_limited: "rate limited (429)",
  quota_exhausted: "quota exhausted (429)",
  concurrency_limited: "concurrency limited (429)",
  cost_exceeds_limit: "cost above the limit (429)",
  unknown_key: "unknown or missing key (401)",
  tenant_suspended: "tenant suspended (403)",
  store_unavailable: "store unavailable, failure mode closed (503)",
};

/**
 * Denials counted before the decision servers recorded the reason (minutes written before
 * 2026-12-06): their status is not known, so no share counts them.
 */
export const UNRECORDED_REASON = "not_recorded";
export const UNRECORDED_REASON_LABEL = "denied, reason not recorded (older data)";

export function isDenialReason(value: string): value is DenialReason {
  return (DENIAL_REASONS as readonly string[]).includes(value);
}

/** Denials by reason, every reason present (0 where none), plus those whose reason was not recorded. */
export type DenialsByReason = Record<DenialReason | typeof UNRECORDED_REASON, number>;

export function emptyDenials(): DenialsByReason {
  return { ...(Object.fromEntries(DENIAL_REASONS.map((r) => [r, 0])) as Record<DenialReason, number>), [UNRECORDED_REASON]: 0 };
}

/** The 429s among denials. */
export function count429(d: DenialsByReason): number {
  return REASONS_429.reduce((s, r) => s + d[r], 0);
}
