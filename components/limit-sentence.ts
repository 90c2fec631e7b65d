/**
 * Plain-English descriptions of a limit-matrix cell, quota and global cap, for the tiers page:
 * "100 requests per minute per API key; the 101st gets 429 for up to 60 s."
 * Reads the policy file's own spec types; works on partially edited (invalid) input too.
 */
import { parseDurationMs } from "@/lib/policy/duration";

export interface LimitDraft {
  operation: string;
  scope: string;
  algorithm: string;
  limit?: number;
  window?: string;
  burst?: number;
  precision?: number;
  mode?: string;
  maxDelay?: string;
  leaseTtl?: string;
}

const SCOPE_WORDS: Record<string, string> = {
  api_key: "per API key",
  tenant: "per tenant (all its keys together)",
  ip: "per client IP",
  global: "across all clients of the tier",
};

export function scopeWords(scope: string): string {
  return SCOPE_WORDS[scope] ?? `per ${scope}`;
}

const UNIT_WORDS: [number, string][] = [
  [86_400_000, "day"],
  [3_600_000, "hour"],
  [60_000, "minute"],
  [1_000, "second"],
];

/** 60000 → "per minute", 120000 → "per 2 minutes", 500 → "per 500 ms". */
export function perWindow(windowMs: number): string {
  for (const [ms, word] of UNIT_WORDS) {
    if (windowMs === ms) return `per ${word}`;
    if (windowMs % ms === 0) return `per ${windowMs / ms} ${word}s`;
  }
  return `per ${windowMs} ms`;
}

/** Seconds, rounded up like Retry-After. */
export function secondsText(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = Math.ceil(ms / 1000);
  if (s % 3600 === 0) return `${s / 3600} h`;
  if (s % 60 === 0 && s >= 120) return `${s / 60} min`;
  return `${s} s`;
}

const n = (x: number) => x.toLocaleString("en-US");
const ordinal = (x: number) => {
  const s = ["th", "st", "nd", "rd"];
  const v = x % 100;
  return `${n(x)}${s[(v - 20) % 10] ?? s[v] ?? s[0]}`;
};

/** The policy file's bounds of a limit and a burst (lib/policy/policy-file.ts): whole numbers 1 … 10⁹. */
const MAX_COUNT = 1_000_000_000;
const isCount = (x: number | undefined): x is number => x !== undefined && Number.isInteger(x) && x >= 1 && x <= MAX_COUNT;

export function describeLimit(l: LimitDraft): string {
  const op = l.operation === "*" ? "requests" : `${l.operation} requests`;
  const scope = scopeWords(l.scope);
  const windowMs = l.window ? parseDurationMs(l.window) : null;
  const mode = l.mode ?? "reject";
  // Only a limit the policy file accepts is put into words: never "-5 requests", "the 4.5th".
  if (!isCount(l.limit)) return `Enter a whole number of requests from 1 to ${n(MAX_COUNT)}.`;
  const limit = l.limit;
  if (l.burst !== undefined && !isCount(l.burst)) return `Enter a burst: a whole number from 1 to ${n(MAX_COUNT)}.`;
  let text: string;
  if (l.algorithm === "concurrency") {
    const ttl = l.leaseTtl ? parseDurationMs(l.leaseTtl) : 30_000;
    text = `At most ${n(limit)} ${op} in flight ${scope}; the ${ordinal(limit + 1)} concurrent one gets 429 until one finishes (an unreleased lease expires after ${secondsText(ttl ?? 30_000)}).`;
  } else if (!windowMs) {
    return "Enter a window like 1m.";
  } else if (l.algorithm === "token_bucket" || l.algorithm === "leaky_bucket") {
    const burst = l.burst ?? limit;
    const refillMs = Math.ceil(windowMs / limit);
    const noun = l.algorithm === "token_bucket" ? "bucket" : "queue";
    text = `${n(limit)} ${op} ${perWindow(windowMs)} ${scope}, with a ${noun} of ${n(burst)} for bursts; once it is empty, the next one gets 429 for about ${secondsText(refillMs)} (one request refills every ${secondsText(refillMs)}).`;
    if (mode === "delay") {
      const maxDelayMs = l.maxDelay ? parseDurationMs(l.maxDelay) : null;
      text = `${n(limit)} ${op} ${perWindow(windowMs)} ${scope}, bursts of ${n(burst)}; excess requests wait until they fit, up to ${maxDelayMs ? secondsText(maxDelayMs) : "max delay"}, and get 429 beyond that.`;
    }
  } else {
    const retry =
      l.algorithm === "fixed_window"
        ? `until the window resets (up to ${secondsText(windowMs)})`
        : `for up to ${secondsText(windowMs)}`;
    text = `${n(limit)} ${op} ${perWindow(windowMs)} ${scope}; the ${ordinal(limit + 1)} gets 429 ${retry}.`;
  }
  if (mode === "shadow") text += " Shadow mode: nothing is denied; would-be denials are counted and reported.";
  return text;
}

export function describeQuota(q: { operation: string; period: string; limit?: number; overage?: string }): string {
  const op = q.operation === "*" ? "requests" : `${q.operation} requests`;
  if (!q.limit) return "Enter a limit.";
  const period = q.period === "day" ? "UTC day" : "calendar month (UTC)";
  return q.overage === "bill"
    ? `${n(q.limit)} ${op} included per tenant per ${period}; beyond that requests pass and are billed as overage.`
    : `${n(q.limit)} ${op} per tenant per ${period}; once spent, requests get 429 (quota_exhausted) until the period ends.`;
}

export function describeGlobalCap(g: { operation: string; limit?: number; window?: string; share?: string }): string {
  const windowMs = g.window ? parseDurationMs(g.window) : null;
  if (!g.limit || !windowMs) return "Enter a limit and a window.";
  const op = g.operation === "*" ? "requests" : `${g.operation} requests`;
  return `${n(g.limit)} ${op} ${perWindow(windowMs)} across all tenants${g.share === "weighted" ? "; under contention each tenant gets capacity in proportion to its tier weight, and a tenant alone may use it all" : ""}.`;
}
