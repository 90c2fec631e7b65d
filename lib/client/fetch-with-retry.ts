/**
 * `fetchWithRetry(url, init, options)`: `fetch` for the people calling an API that Sluice (or any
 * well-behaved rate limiter) protects.
 *
 * - 429 and 503 are retried after the wait the server names (`Retry-After` seconds or HTTP date,
 *   else `RateLimit`'s `t`, else legacy `RateLimit-Reset`; see retry-headers.ts), never earlier and
 *   at most `baseDelayMs` later, so clients told the same second do not all come back at once.
 *   Without a named wait: exponential backoff with full jitter, a uniform draw from
 *   [0, min(maxDelayMs, baseDelayMs × 2^retry)).
 * - Network errors are retried the same way (backoff); every other status — other 4xx above all —
 *   is returned at once.
 * - `retries` caps the attempts (at most 1 + retries requests); `deadlineMs` caps the whole call
 *   (waits and requests; an attempt still running at the deadline is aborted with a TimeoutError).
 *   A named wait longer than `maxDelayMs`, or past the deadline, is not waited: the 429 comes back
 *   to the caller, with its `Retry-After`.
 * - POST and PATCH carry one `Idempotency-Key` on every attempt: the caller's, or a random one
 *   made here, so a retried mutation is applied once by a server that honours it
 *   (draft-ietf-httpapi-idempotency-key-header).
 * - Calls sharing an origin share its cooldown (cooldowns.ts): while it lasts, no call to that
 *   origin is sent; one that cannot wait it out gets a local 429 (or 503) with `Retry-After`.
 */
import { type Clock, deadlineSignal, realClock } from "./clock.js";
import { OriginCooldowns, sharedCooldowns, type Turn } from "./cooldowns.js";
import { serverDelayMs } from "./retry-headers.js";

export interface FetchWithRetryOptions {
  /** Retries after the first attempt (default 3: at most 4 requests). */
  retries?: number;
  /** First backoff step (default 100 ms); also the spread added after a server-named wait. */
  baseDelayMs?: number;
  /** Longest single wait (default 20 s): caps backoff; a longer server-named wait ends retrying. */
  maxDelayMs?: number;
  /** Budget for the whole call, waits included (default: none). */
  deadlineMs?: number;
  /** The key for POST / PATCH (default: the request's own header, else a random UUID); false: none. */
  idempotencyKey?: string | false;
  /** Whose cooldowns to share (default: the process-wide registry); false: none. */
  cooldowns?: OriginCooldowns | false;
  fetch?: typeof fetch;
  clock?: Clock;
  /** Uniform in [0, 1) (default Math.random); tests pass a seeded one. */
  random?: () => number;
  /** Called before each wait for a retry. */
  onRetry?: (info: RetryInfo) => void;
}

export interface RetryInfo {
  /** The retry about to be made (1 for the first retry). */
  retry: number;
  delayMs: number;
  /** The status that is retried, or null after a network error. */
  status: number | null;
  /** Whether the wait was named by the server (else backoff). */
  named: boolean;
}

/** Statuses worth another attempt: the server asked the client to come back later. */
const RETRY_STATUSES = new Set([429, 503]);
const IDEMPOTENT_UNSAFE = new Set(["POST", "PATCH"]);
const TITLES: Record<number, string> = { 429: "Too Many Requests", 503: "Service Unavailable" };

function nonNegative(name: string, value: number | undefined, fallback: number, integer = false): number {
  const v = value ?? fallback;
  if (typeof v !== "number" || Number.isNaN(v) || v < 0 || (integer && !Number.isInteger(v))) {
    throw new TypeError(`fetchWithRetry: ${name}: expected ${integer ? "an integer" : "a number"} ≥ 0, got ${String(value)}`);
  }
  return v;
}

function randomKey(): string {
  const c = globalThis.crypto;
  // randomUUID exists only in secure contexts in browsers; getRandomValues everywhere.
  if (typeof c.randomUUID === "function") return c.randomUUID();
  const bytes = c.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A response whose body has been read into memory, so its connection is free and it can still be returned. */
async function buffered(res: Response): Promise<Response> {
  const body = await res.arrayBuffer().catch(() => new ArrayBuffer(0));
  return new Response(body.byteLength === 0 ? null : body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/** What a call that cannot wait out the origin's cooldown gets, without reaching the server. */
function cooldownResponse(turn: Extract<Turn, { kind: "late" }>, nowMs: number): Response {
  const seconds = Math.max(1, Math.ceil((turn.untilMs - nowMs) / 1000));
  const status = turn.status;
  const body = {
    type: "about:blank",
    title: TITLES[status] ?? "Too Many Requests",
    status,
    detail: `not sent: this origin asked clients to wait, and the wait (${seconds} s) is longer than this call may wait`,
  };
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/problem+json", "retry-after": String(seconds) },
  });
}

export async function fetchWithRetry(input: string | URL | Request, init: RequestInit = {}, options: FetchWithRetryOptions = {}): Promise<Response> {
  const retries = nonNegative("retries", options.retries, 3, true);
  const baseDelayMs = nonNegative("baseDelayMs", options.baseDelayMs, 100);
  const maxDelayMs = nonNegative("maxDelayMs", options.maxDelayMs, 20_000);
  const deadlineMs = nonNegative("deadlineMs", options.deadlineMs, Number.POSITIVE_INFINITY);
  const clock = options.clock ?? realClock;
  const random = options.random ?? Math.random;
  const fetchFn = options.fetch ?? ((i: Request) => fetch(i));
  const cooldowns = options.cooldowns === false ? null : (options.cooldowns ?? sharedCooldowns);

  let base = new Request(input, init);
  if (IDEMPOTENT_UNSAFE.has(base.method.toUpperCase()) && options.idempotencyKey !== false && !base.headers.has("idempotency-key")) {
    const headers = new Headers(base.headers);
    headers.set("idempotency-key", options.idempotencyKey ?? randomKey());
    base = new Request(base, { headers });
  }
  const origin = new URL(base.url).origin;
  const callerSignal = base.signal;
  const deadlineAtMs = clock.now() + deadlineMs;
  const backoffMs = (retry: number) => random() * Math.min(maxDelayMs, baseDelayMs * 2 ** retry);

  let last: Response | null = null;
  for (let attempt = 0; ; attempt++) {
    let turn: Turn = { kind: "go", report: () => {} };
    if (cooldowns) {
      turn = await cooldowns.turn(origin, { limitAtMs: Math.min(deadlineAtMs, clock.now() + maxDelayMs + baseDelayMs), clock, signal: callerSignal });
      if (turn.kind === "late") return last ?? cooldownResponse(turn, clock.now());
    }
    const report = turn.report;
    const attemptDeadline = deadlineSignal(deadlineAtMs - clock.now(), callerSignal, `fetchWithRetry: deadline of ${deadlineMs} ms passed`);
    let res: Response;
    try {
      // A clone per attempt: the body of the first is still there for the next.
      res = await fetchFn(new Request(base.clone(), { signal: attemptDeadline.signal }));
    } catch (error) {
      attemptDeadline.clear();
      report({ kind: "failed" });
      if (callerSignal.aborted) throw error;
      if (attemptDeadline.signal.aborted) throw attemptDeadline.signal.reason;
      const delayMs = backoffMs(attempt);
      if (attempt >= retries || clock.now() + delayMs > deadlineAtMs) throw error;
      options.onRetry?.({ retry: attempt + 1, delayMs, status: null, named: false });
      await clock.sleep(delayMs, callerSignal);
      continue;
    }
    const nowMs = clock.now();
    if (!RETRY_STATUSES.has(res.status)) {
      attemptDeadline.clear();
      report({ kind: "passed", nowMs });
      return res;
    }
    const namedMs = serverDelayMs(res.headers, nowMs);
    const delayMs = namedMs === null ? backoffMs(attempt) : namedMs + random() * baseDelayMs;
    report({ kind: "limited", untilMs: nowMs + delayMs, status: res.status });
    const giveUp = attempt >= retries || (namedMs !== null && namedMs > maxDelayMs) || nowMs + delayMs > deadlineAtMs;
    if (giveUp) {
      attemptDeadline.clear();
      return res;
    }
    // Read it now (it frees the connection), keeping it to return if no later attempt is made.
    last = await buffered(res);
    attemptDeadline.clear();
    options.onRetry?.({ retry: attempt + 1, delayMs, status: res.status, named: namedMs !== null });
    // With a shared cooldown, the next turn waits (at least) this long; without one, wait here.
    if (!cooldowns) await clock.sleep(delayMs, callerSignal);
  }
}
