/**
 * Driving decision servers of several regions, for the region tests and `npm run bench:regions`
 * (docs/regions.md): checks against one server, closed-loop (N clients at once) or open-loop (a
 * rate), the replication status of /readyz, and the most admissions inside any span of time.
 */

/** What one check said, and when it was sent and answered (Date.now() ms). */
export interface Checked {
  allowed: boolean;
  /** The answer's `remaining` (of the limit it names). */
  remaining: number;
  limit: number;
  /** Decided without the counter store (its budget ran out: the failure mode decided, and nothing was counted). */
  degraded: boolean;
  /** Seconds until the deciding window ends (or, denied, until it is worth retrying), rounded up. */
  resetSeconds: number;
  sentMs: number;
  atMs: number;
}

export interface CheckTarget {
  url: string;
  token: string;
  key: string;
}

export const ORDERS = "GET /v1/orders";

export async function checkOnce(t: CheckTarget, timeoutMs = 5_000): Promise<Checked> {
  const sentMs = Date.now();
  const res = await fetch(`${t.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${t.token}`, "content-type": "application/json" },
    body: JSON.stringify({ key: t.key, operation: ORDERS }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const a = (await res.json()) as { allowed?: unknown; remaining?: unknown; limit?: unknown; degraded?: unknown; resetSeconds?: unknown };
  if (typeof a.allowed !== "boolean") throw new Error(`${t.url}/v1/check answered ${res.status} without "allowed"`);
  return { allowed: a.allowed, remaining: Number(a.remaining ?? 0), limit: Number(a.limit ?? 0), degraded: a.degraded === true, resetSeconds: Number(a.resetSeconds ?? 0), sentMs, atMs: Date.now() };
}

export interface Driven {
  admitted: number;
  answers: number;
  /** When each admitted answer arrived (ms), sorted. */
  admittedAtMs: number[];
  /** The slowest answer (ms from sending to arriving). */
  maxLatencyMs: number;
}

/** Checks against one server, `concurrency` at a time, until `untilMs`. */
export async function drive(t: CheckTarget, untilMs: number, concurrency: number): Promise<Driven> {
  const out: Driven = { admitted: 0, answers: 0, admittedAtMs: [], maxLatencyMs: 0 };
  const loop = async () => {
    while (Date.now() < untilMs) {
      const c = await checkOnce(t);
      out.answers++;
      out.maxLatencyMs = Math.max(out.maxLatencyMs, c.atMs - c.sentMs);
      if (c.allowed) {
        out.admitted++;
        out.admittedAtMs.push(c.atMs);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  out.admittedAtMs.sort((x, y) => x - y);
  return out;
}

/**
 * Open loop: `ratePerSec()` checks a second (read every tick, so the rate may change) against one
 * server until `untilMs`, at most `maxInFlight` unanswered (the rest are not sent, and counted as
 * `skipped`). Every answer is handed to `onAnswer`.
 */
export async function pace(t: CheckTarget, ratePerSec: () => number, untilMs: number, onAnswer: (c: Checked) => void, maxInFlight = 64): Promise<{ sent: number; skipped: number; errors: number }> {
  const stats = { sent: 0, skipped: 0, errors: 0 };
  const inFlight = new Set<Promise<void>>();
  let owed = 0;
  let last = Date.now();
  while (Date.now() < untilMs) {
    await new Promise((r) => setTimeout(r, 10));
    const now = Date.now();
    owed += (ratePerSec() * (now - last)) / 1000;
    last = now;
    for (; owed >= 1; owed--) {
      if (inFlight.size >= maxInFlight) {
        stats.skipped++;
        continue;
      }
      stats.sent++;
      const p: Promise<void> = checkOnce(t).then(onAnswer, () => void stats.errors++).finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
  }
  await Promise.all(inFlight);
  return stats;
}

/** The most of these instants (sorted) inside any span of `spanMs`. */
export function mostInSpan(sortedMs: readonly number[], spanMs: number): number {
  let most = 0;
  for (let lo = 0, hi = 0; hi < sortedMs.length; hi++) {
    while (sortedMs[hi]! - sortedMs[lo]! > spanMs) lo++;
    most = Math.max(most, hi - lo + 1);
  }
  return most;
}

export interface Replication {
  status: string;
  lagMs: number | null;
}

export async function replicationOf(url: string): Promise<Replication> {
  const body = (await (await fetch(`${url}/readyz`)).json()) as { replication?: Replication };
  if (!body.replication) throw new Error(`${url}/readyz has no replication`);
  return body.replication;
}

/** Waits until every server's /readyz says this replication status. */
export async function waitForReplication(urls: readonly string[], status: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all = await Promise.all(urls.map(replicationOf));
    if (all.every((r) => r.status === status)) return;
    if (Date.now() > deadline) throw new Error(`replication did not become ${status}: ${JSON.stringify(all)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
