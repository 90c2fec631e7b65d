/**
 * The one vocabulary for naming a limit or a quota on screen: the same limit reads the same on the
 * tiers page, the tenant page, the dashboards, the simulator and billing —
 * "API key · sliding window counter · 100 per 1 min", "all operations · 2,000,000 units per month".
 * Pure: no React, usable by pages, components and services alike.
 */
import { ANY_OPERATION } from "./types";

const SCOPE_LABELS: Record<string, string> = { api_key: "API key", tenant: "tenant", ip: "client IP", global: "all clients (global)" };
const ALGORITHM_LABELS: Record<string, string> = {
  fixed_window: "fixed window",
  sliding_window_log: "sliding window log",
  sliding_window_counter: "sliding window counter",
  token_bucket: "token bucket",
  leaky_bucket: "leaky bucket",
  concurrency: "concurrency",
};

export function scopeLabel(scope: string): string {
  return SCOPE_LABELS[scope] ?? scope;
}

export function algorithmLabel(algorithm: string): string {
  return ALGORITHM_LABELS[algorithm] ?? algorithm.replaceAll("_", " ");
}

export function operationLabel(operation: string): string {
  return operation === ANY_OPERATION ? "all operations" : operation;
}

const n = (x: number) => x.toLocaleString("en-US");

/** 60000 → "1 min", 3600000 → "1 h", 1500 → "1.5 s", 86400000 → "1 day". */
export function windowLabel(windowMs: number): string {
  if (windowMs % 86_400_000 === 0) return `${windowMs / 86_400_000} day${windowMs === 86_400_000 ? "" : "s"}`;
  if (windowMs % 3_600_000 === 0) return `${windowMs / 3_600_000} h`;
  if (windowMs % 60_000 === 0) return `${windowMs / 60_000} min`;
  if (windowMs % 1000 === 0 || windowMs > 1000) return `${n(windowMs / 1000)} s`;
  return `${windowMs} ms`;
}

export interface LimitLike {
  scope: string;
  algorithm: string;
  limit: number;
  /** Absent or 0 for concurrency. */
  windowMs?: number | null;
  mode?: string;
}

/**
 * "API key · sliding window counter · 100 per 1 min" (concurrency: "… · 10 in flight"; shadow/delay
 * modes said last). A windowed limit still being edited without a window says so, never "in flight".
 */
export function limitLabel(l: LimitLike): string {
  const amount =
    l.algorithm === "concurrency" ? `${n(l.limit)} in flight` : l.windowMs ? `${n(l.limit)} per ${windowLabel(l.windowMs)}` : `${n(l.limit)} per (no window yet)`;
  const mode = l.mode && l.mode !== "reject" ? ` · ${l.mode}` : "";
  return `${scopeLabel(l.scope)} · ${algorithmLabel(l.algorithm)} · ${amount}${mode}`;
}

export interface QuotaLike {
  operation: string;
  period: string;
  limit: number;
  overage?: string;
}

/** "all operations · 2,000,000 units per month · overage billed" ("per UTC day" for daily quotas). */
export function quotaLabel(q: QuotaLike): string {
  const per = q.period === "day" ? "per UTC day" : `per ${q.period}`;
  const overage = q.overage === "bill" ? " · overage billed" : q.overage === "block" ? " · blocked when used up" : "";
  return `${operationLabel(q.operation)} · ${n(q.limit)} units ${per}${overage}`;
}
