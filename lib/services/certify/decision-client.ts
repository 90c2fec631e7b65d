/**
 * How `sluice certify` talks to the decision servers under test, over their public API
 * (docs/decision-api.md): one check, a dry run, batches of one subject (at most two in flight),
 * requests on a schedule, and the servers' metrics. The scenarios (./scenarios.ts) judge the answers.
 */
import type { Subject } from "./plan";
import { request } from "./http";

export interface Endpoint {
  url: string;
  token: string;
}

export interface Answer {
  allowed: boolean;
  status: number;
  reason: string;
  retryAfterSeconds: number;
  delayMs: number;
  degraded?: boolean;
  shadowDenied?: boolean;
  policyVersion: number;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

function body(s: Subject, cost?: number) {
  return { key: s.key, operation: s.operation, ip: s.ip, ...(cost !== undefined ? { cost } : {}) };
}

const TIMEOUT_MS = 30_000;

async function postCheck(e: Endpoint, payload: unknown): Promise<{ status: number; json: unknown; serverMs: number | null }> {
  const res = await request(`${e.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${e.token}`, "content-type": "application/json" },
    body: JSON.stringify(payload),
    timeoutMs: TIMEOUT_MS,
  });
  const timing = /decide;dur=([\d.]+)/.exec(String(res.headers["server-timing"] ?? ""));
  return { status: res.status, json: JSON.parse(res.text) as unknown, serverMs: timing ? Number(timing[1]) : null };
}

export async function checkOne(e: Endpoint, s: Subject, cost?: number): Promise<{ answer: Answer; latencyMs: number; serverMs: number | null }> {
  const started = performance.now();
  const { json, serverMs } = await postCheck(e, body(s, cost));
  return { answer: json as Answer, latencyMs: performance.now() - started, serverMs };
}

/** A dry run: decided, nothing consumed (it makes a server learn the subject's key). */
export async function checkDry(e: Endpoint, s: Subject): Promise<void> {
  await postCheck(e, { ...body(s), dryRun: true });
}

/**
 * At most two boundary batches in flight: a decision server coalesces what reaches it in one
 * event-loop turn into store calls of at most 128 decisions, so two batches of ≤ 51 are decided
 * in one call, at one instant of the store's clock, as the model assumes.
 */
let batchesInFlight = 0;
const waiting: (() => void)[] = [];
async function gated<T>(fn: () => Promise<T>): Promise<T> {
  while (batchesInFlight >= 2) await new Promise<void>((r) => waiting.push(r));
  batchesInFlight++;
  try {
    return await fn();
  } finally {
    batchesInFlight--;
    waiting.shift()?.();
  }
}

/** `n` requests of one subject in one batch: one store call, decided one after another at one instant. */
export function checkBatch(e: Endpoint, s: Subject, n: number, cost?: number): Promise<Answer[]> {
  return gated(() => sendBatch(e, s, n, cost));
}

export async function sendBatch(e: Endpoint, s: Subject, n: number, cost?: number): Promise<Answer[]> {
  const out: Answer[] = [];
  for (let done = 0; done < n; done += 100) {
    const { status, json } = await postCheck(e, { requests: Array.from({ length: Math.min(100, n - done) }, () => body(s, cost)) });
    const results = (json as { results?: Answer[] }).results;
    if (!results) throw new Error(`batch check answered ${status}: ${JSON.stringify(json).slice(0, 200)}`);
    out.push(...results);
  }
  return out;
}

/** Sends one subject's requests at the given offsets (ms from now); the answers in order. */
export async function sendAt(e: Endpoint, s: Subject, offsets: readonly number[], cost: number | undefined): Promise<Answer[]> {
  const start = Date.now();
  return Promise.all(
    offsets.map(async (t) => {
      await sleep(start + t - Date.now());
      return (await checkOne(e, s, cost)).answer;
    }),
  );
}

/** A decision server's Prometheus text (`GET /metrics`). */
export async function readMetrics(e: Endpoint): Promise<string> {
  return (await request(`${e.url}/metrics`, { method: "GET", timeoutMs: TIMEOUT_MS })).text;
}

export function metricValue(text: string, name: string, labels: Record<string, string>): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.indexOf("}");
    const series = line.slice(name.length + 1, close);
    if (Object.entries(labels).every(([k, v]) => series.includes(`${k}="${v}"`))) total += Number(line.slice(close + 1).trim());
  }
  return total;
}
