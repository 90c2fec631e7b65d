/**
 * A circuit breaker around the counter store. Closed: calls go through and are counted in a rolling
 * window of 1-second buckets. When at least `minCalls` calls in the window failed at a rate ≥
 * `failureRatio`, it opens for `openMs`: no store call at all, every decision takes its operation's
 * failure mode. Then half-open: one probe at a time; a success closes it, a failure opens it again.
 */
export type BreakerState = "closed" | "open" | "half_open";

export interface BreakerOptions {
  failureRatio?: number;
  minCalls?: number;
  openMs?: number;
  windowMs?: number;
}

export class CircuitBreaker {
  readonly failureRatio: number;
  readonly minCalls: number;
  readonly openMs: number;
  readonly bucketCount: number;
  private buckets: { second: number; calls: number; failures: number }[] = [];
  private openUntilMs = 0;
  private probing = false;
  private _state: BreakerState = "closed";
  /** Called on every state change (metrics). */
  onChange: ((state: BreakerState) => void) | null = null;

  constructor(options: BreakerOptions = {}) {
    this.failureRatio = options.failureRatio ?? 0.5;
    this.minCalls = options.minCalls ?? 20;
    this.openMs = options.openMs ?? 5_000;
    this.bucketCount = Math.max(1, Math.round((options.windowMs ?? 10_000) / 1000));
  }

  get state(): BreakerState {
    return this._state;
  }

  private set(state: BreakerState): void {
    if (state === this._state) return;
    this._state = state;
    this.onChange?.(state);
  }

  /** Whether a store call may go out now. Half-open lets one probe through: report it with `success` or `failure`. */
  allow(nowMs: number): boolean {
    if (this._state === "closed") return true;
    if (this._state === "open") {
      if (nowMs < this.openUntilMs) return false;
      this.set("half_open");
    }
    if (this.probing) return false;
    this.probing = true;
    return true;
  }

  private bucket(nowMs: number) {
    const second = Math.floor(nowMs / 1000);
    const last = this.buckets[this.buckets.length - 1];
    if (last && last.second === second) return last;
    const fresh = { second, calls: 0, failures: 0 };
    this.buckets.push(fresh);
    while (this.buckets.length > 0 && this.buckets[0]!.second <= second - this.bucketCount) this.buckets.shift();
    return fresh;
  }

  /** The store's connection is back: end an open period now, so the next call probes instead of waiting out `openMs`. */
  probeNow(): void {
    if (this._state === "open") this.openUntilMs = 0;
  }

  success(nowMs: number): void {
    if (this._state !== "closed") {
      this.probing = false;
      this.buckets = [];
      this.set("closed");
      return;
    }
    this.bucket(nowMs).calls++;
  }

  failure(nowMs: number): void {
    if (this._state !== "closed") {
      this.probing = false;
      this.openUntilMs = nowMs + this.openMs;
      this.set("open");
      return;
    }
    const b = this.bucket(nowMs);
    b.calls++;
    b.failures++;
    let calls = 0;
    let failures = 0;
    for (const x of this.buckets) {
      calls += x.calls;
      failures += x.failures;
    }
    if (calls >= this.minCalls && failures >= this.failureRatio * calls) {
      this.openUntilMs = nowMs + this.openMs;
      this.set("open");
    }
  }
}
