/**
 * `SluiceClient`: a service asks the decision API whether a request may pass.
 *
 * A denial is a value (`allowed: false` with its status and headers), never an exception. When the
 * decision API cannot be asked — unreachable, slower than `timeoutMs` (the whole round trip, body
 * included), answering 5xx, or refusing the service token — `onError` decides, within `timeoutMs`:
 * `"open"` allows with `degraded: true`, `"closed"` denies with status 503 `store_unavailable`.
 * Both carry `error`, saying why. Only a request the decision API calls invalid (400, 413) throws
 * `SluiceRequestError`: that is a bug in the caller, and no failure mode should hide it.
 *
 * `fetch` only, no runtime dependency: it runs on Node 20+, edge runtimes and browsers.
 */
import { type Clock, deadlineSignal, realClock } from "./clock.js";
import type { DecisionAnswer, DecisionRequest, SettleAnswer, SettleOutcome, WireAnswer } from "./types.js";

/** The decision API's batch limit (`{ requests: [...] }`); `checkMany` splits longer lists. */
export const MAX_BATCH = 100;

export interface SluiceClientOptions {
  /** The decision server's base URL, e.g. `http://sluice-decision:8787`. */
  url: string;
  /** A service token (`sluice tokens create --kind service`). */
  token: string;
  /** Budget for one call to the decision API, body included (default 50 ms). */
  timeoutMs?: number;
  /** What to answer when the decision API cannot be asked in time (default `"open"`). */
  onError?: "open" | "closed";
  /** Called with every failure to reach the decision API (for logs and metrics). */
  onUnavailable?: (error: SluiceUnavailableError) => void;
  /** Another fetch (a runtime's bound fetch, an instrumented one). */
  fetch?: typeof fetch;
  /** Time source for `pace` (tests pass a fake one). */
  clock?: Clock;
}

/** The decision API rejected the request itself (400 / 413): the caller's bug, named by field. */
export class SluiceRequestError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly field: string | null,
  ) {
    super(message);
    this.name = "SluiceRequestError";
  }
}

/** Why the decision API could not be asked (passed to `onUnavailable`; never thrown). */
export class SluiceUnavailableError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
    this.name = "SluiceUnavailableError";
  }
}

/**
 * A decision that may hold concurrency leases. `await using lease = await client.acquire(req)`
 * releases them when the block ends; `release()` does it earlier (once; later calls do nothing).
 */
export interface Lease extends AsyncDisposable {
  readonly answer: DecisionAnswer;
  readonly allowed: boolean;
  /** Whether the leases were released (always true when the answer held none). */
  readonly released: boolean;
  /** Frees the leases; resolves to whether the decision API freed one. */
  release(): Promise<boolean>;
}

export type LeaseOutcome<T> = { allowed: true; answer: DecisionAnswer; value: T } | { allowed: false; answer: DecisionAnswer };

/** `pace`: go now (after waiting any shaping delay), or come back after `retryAfterMs`. */
export type PaceResult =
  | { allowed: true; answer: DecisionAnswer; waitedMs: number }
  /** `retryAfterMs` is null when waiting cannot help: unknown key, suspended tenant, a cost above the limit. */
  | { allowed: false; answer: DecisionAnswer; retryAfterMs: number | null };

/** Seconds a fail-closed queue consumer waits before asking again (the decision API gave no time). */
const UNAVAILABLE_RETRY_MS = 1_000;

/** `Symbol.asyncDispose`, or the registry symbol polyfills use where the runtime has none yet. */
function asyncDisposeSymbol(): typeof Symbol.asyncDispose {
  return (Symbol.asyncDispose ?? Symbol.for("Symbol.asyncDispose")) as typeof Symbol.asyncDispose;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isAnswer(value: unknown): value is WireAnswer {
  return isObject(value) && typeof value.allowed === "boolean" && typeof value.status === "number" && isObject(value.headers);
}

function isSettleAnswer(value: unknown): value is SettleAnswer {
  return (
    isObject(value) &&
    typeof value.reservationId === "string" &&
    typeof value.reservedCost === "number" &&
    typeof value.actualCost === "number" &&
    typeof value.refunded === "number" &&
    typeof value.replayed === "boolean"
  );
}

type Posted = { ok: true; status: number; body: unknown } | { ok: false; error: string };

export class SluiceClient {
  readonly url: string;
  readonly timeoutMs: number;
  readonly onError: "open" | "closed";
  private readonly token: string;
  private readonly fetchFn: typeof fetch;
  private readonly clock: Clock;
  private readonly onUnavailable?: (error: SluiceUnavailableError) => void;

  constructor(options: SluiceClientOptions) {
    let url: URL | null = null;
    try {
      url = new URL(options.url);
    } catch {
      // reported below
    }
    if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) {
      throw new TypeError(`SluiceClient: url: expected an absolute http(s) URL, got ${JSON.stringify(options.url)}`);
    }
    if (typeof options.token !== "string" || options.token.trim() === "") throw new TypeError("SluiceClient: token: expected a service token");
    const timeoutMs = options.timeoutMs ?? 50;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new TypeError(`SluiceClient: timeoutMs: expected a positive number, got ${timeoutMs}`);
    const onError = options.onError ?? "open";
    if (onError !== "open" && onError !== "closed") throw new TypeError(`SluiceClient: onError: expected "open" or "closed", got ${JSON.stringify(onError)}`);
    this.url = url.href.replace(/\/+$/, "");
    this.token = options.token.trim();
    this.timeoutMs = timeoutMs;
    this.onError = onError;
    // Unbound, a platform fetch throws "Illegal invocation" in browsers and some edge runtimes.
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
    this.clock = options.clock ?? realClock;
    this.onUnavailable = options.onUnavailable;
  }

  /** Asks whether one request may pass. Never throws for a denial or an unreachable decision API. */
  async check(request: DecisionRequest, options: { signal?: AbortSignal } = {}): Promise<DecisionAnswer> {
    const posted = await this.post("/v1/check", request, options.signal);
    if (posted.ok && isAnswer(posted.body)) return posted.body;
    return this.fallback(posted.ok ? "unexpected answer from /v1/check" : posted.error);
  }

  /** Asks about several requests, each decided on its own (batches of at most 100 per call). */
  async checkMany(requests: readonly DecisionRequest[], options: { signal?: AbortSignal } = {}): Promise<DecisionAnswer[]> {
    const batches: DecisionRequest[][] = [];
    for (let i = 0; i < requests.length; i += MAX_BATCH) batches.push(requests.slice(i, i + MAX_BATCH));
    const answers = await Promise.all(
      batches.map(async (batch) => {
        const posted = await this.post("/v1/check", { requests: batch }, options.signal);
        const results = posted.ok && isObject(posted.body) ? posted.body.results : undefined;
        if (Array.isArray(results) && results.length === batch.length && results.every(isAnswer)) return results as DecisionAnswer[];
        const answer = this.fallback(posted.ok ? "unexpected answer from /v1/check" : posted.error);
        return batch.map(() => ({ ...answer, headers: {} }));
      }),
    );
    return answers.flat();
  }

  /** Frees a concurrency lease (or several, comma-separated). False when unknown, expired or unreachable. */
  async release(leaseId: string): Promise<boolean> {
    if (leaseId === "") return false;
    const posted = await this.post("/v1/release", { leaseId });
    return posted.ok && isObject(posted.body) && posted.body.released === true;
  }

  /**
   * Settles a reservation (a `reserve: true` check's `reservationId`) with the cost the work
   * actually had: the difference is refunded, once. Safe to repeat with the same `actualCost` (the
   * answer is the same, `replayed: true`). Never throws for an unknown id, a conflict or an
   * unreachable decision API: see SettleOutcome.
   */
  async settle(reservationId: string, actualCost: number, options: { signal?: AbortSignal } = {}): Promise<SettleOutcome> {
    const posted = await this.post("/v1/settle", { reservationId, actualCost }, options.signal, [200, 404, 409]);
    if (!posted.ok) return { ok: false, reason: "unavailable", error: posted.error };
    const body = posted.body;
    if (posted.status === 200 && isSettleAnswer(body)) return { ok: true, ...body };
    const error = isObject(body) && isObject(body.error) && typeof body.error.message === "string" ? body.error.message : `HTTP ${posted.status}`;
    if (posted.status === 404) return { ok: false, reason: "unknown", error };
    if (posted.status === 409) return { ok: false, reason: "conflict", error };
    return { ok: false, reason: "unavailable", error: "unexpected answer from /v1/settle" };
  }

  /** Decides and returns a lease to hold while the work runs: `await using lease = await client.acquire(req)`. */
  async acquire(request: DecisionRequest, options: { signal?: AbortSignal } = {}): Promise<Lease> {
    const answer = await this.check(request, options);
    const leaseId = answer.allowed ? answer.leaseId : undefined;
    let releasing: Promise<boolean> | null = leaseId === undefined ? Promise.resolve(false) : null;
    const release = () => (releasing ??= this.release(leaseId!));
    return {
      answer,
      allowed: answer.allowed,
      get released() {
        return releasing !== null;
      },
      release,
      [asyncDisposeSymbol()]: async () => {
        await release();
      },
    };
  }

  /** Runs `fn` only if allowed, releasing the leases afterwards (also when `fn` throws). */
  async withLease<T>(request: DecisionRequest, fn: (answer: DecisionAnswer) => T | Promise<T>): Promise<LeaseOutcome<T>> {
    const lease = await this.acquire(request);
    if (!lease.allowed) return { allowed: false, answer: lease.answer };
    try {
      return { allowed: true, answer: lease.answer, value: await fn(lease.answer) };
    } finally {
      await lease.release();
    }
  }

  /**
   * For queue consumers, where the answer is backpressure rather than a 429: waits the decision's
   * `delayMs` (shaping limits) and says go, or says when to try again, so the consumer slows down
   * instead of failing the job.
   */
  async pace(request: DecisionRequest, options: { signal?: AbortSignal } = {}): Promise<PaceResult> {
    const answer = await this.check(request, options);
    if (answer.allowed) {
      if (answer.delayMs > 0) await this.clock.sleep(answer.delayMs, options.signal);
      return { allowed: true, answer, waitedMs: answer.delayMs };
    }
    let retryAfterMs: number | null = null;
    if (answer.retryAfterSeconds > 0) retryAfterMs = answer.retryAfterSeconds * 1000;
    else if (answer.status === 503) retryAfterMs = UNAVAILABLE_RETRY_MS;
    return { allowed: false, answer, retryAfterMs };
  }

  /** The answer when the decision API could not be asked, by `onError`. */
  private fallback(error: string): DecisionAnswer {
    const base = {
      tenant: null,
      tier: null,
      operation: null,
      policyVersion: 0,
      limit: 0,
      remaining: 0,
      resetSeconds: 0,
      retryAfterSeconds: 0,
      delayMs: 0,
      headers: {},
      error,
    };
    if (this.onError === "open") return { allowed: true, status: 200, reason: "ok", degraded: true, ...base };
    return { allowed: false, status: 503, reason: "store_unavailable", ...base };
  }

  /**
   * One POST within timeoutMs (connect, answer and body). Throws only SluiceRequestError. `answers`:
   * the statuses that are answers of this endpoint (with a JSON body), not failures.
   */
  private async post(path: string, body: unknown, signal?: AbortSignal, answers: readonly number[] = [200]): Promise<Posted> {
    const deadline = deadlineSignal(this.timeoutMs, signal, `the decision API did not answer within ${this.timeoutMs} ms`);
    try {
      const res = await this.fetchFn(`${this.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${this.token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: deadline.signal,
      });
      const text = await res.text();
      let parsed: unknown = undefined;
      try {
        parsed = JSON.parse(text);
      } catch {
        // A proxy's HTML error page, a truncated body: reported below by status.
      }
      if (answers.includes(res.status) && parsed !== undefined) return { ok: true, status: res.status, body: parsed };
      const error = isObject(parsed) && isObject(parsed.error) ? parsed.error : {};
      const message = typeof error.message === "string" ? error.message : `HTTP ${res.status}`;
      if (res.status === 400 || res.status === 413) {
        throw new SluiceRequestError(`decision API refused the request: ${message}`, res.status, typeof error.field === "string" ? error.field : null);
      }
      return this.unavailable(path, `decision API answered ${res.status}${typeof error.code === "string" ? ` ${error.code}` : ""}: ${message}`);
    } catch (error) {
      if (error instanceof SluiceRequestError) throw error;
      if (signal?.aborted) throw signal.reason ?? error;
      const message = deadline.signal.aborted
        ? `the decision API did not answer within ${this.timeoutMs} ms`
        : `the decision API is unreachable: ${error instanceof Error ? error.message : String(error)}`;
      return this.unavailable(path, message);
    } finally {
      deadline.clear();
    }
  }

  private unavailable(path: string, message: string): Posted {
    try {
      this.onUnavailable?.(new SluiceUnavailableError(message, path));
    } catch {
      // A logging hook that throws must not turn a failure mode into a crash.
    }
    return { ok: false, error: message };
  }
}
