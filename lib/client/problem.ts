/**
 * The body a middleware answers a denied request with: RFC 9457 problem details
 * (`application/problem+json`), `type: "about:blank"` with the status's own title, plus two
 * extension members a client can act on: `reason` (the decision's) and `retryAfterSeconds`. The
 * contract `sluice openapi` writes for a rate-limited operation describes exactly this body.
 */
import type { DecisionAnswer, Reason } from "./types.js";

export interface Problem {
  type: "about:blank";
  title: string;
  status: number;
  detail: string;
  /** The decision's reason (`rate_limited`, `quota_exhausted`, …), or `invalid_request`. */
  reason: Reason | "invalid_request";
  /** When to try again (whole seconds), on denials that can pass later. */
  retryAfterSeconds?: number;
}

export const STATUS_TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  429: "Too Many Requests",
  503: "Service Unavailable",
};

const DETAILS: Record<Reason, string> = {
  ok: "allowed",
  rate_limited: "rate limit exceeded",
  quota_exhausted: "quota for this period used up",
  concurrency_limited: "too many requests in flight",
  cost_exceeds_limit: "this request costs more than the limit allows; it cannot pass as it is",
  unknown_key: "missing or unknown API key",
  tenant_suspended: "this account is suspended",
  store_unavailable: "the rate limiter is unavailable; try again shortly",
};

export function problemFor(answer: Pick<DecisionAnswer, "status" | "reason" | "retryAfterSeconds">): Problem {
  const retry = answer.retryAfterSeconds > 0 ? answer.retryAfterSeconds : undefined;
  const problem: Problem = {
    type: "about:blank",
    title: STATUS_TITLES[answer.status] ?? "Error",
    status: answer.status,
    detail: retry === undefined ? DETAILS[answer.reason] : `${DETAILS[answer.reason]}; retry in ${retry} s`,
    reason: answer.reason,
  };
  if (retry !== undefined) problem.retryAfterSeconds = retry;
  return problem;
}
