/**
 * The counter store's clock, as seen from this process, for the time-dependent choices made before
 * or without a store call (which overrides are live, the usage minute, failure mode `local`): a
 * server whose clock is 30 s ahead must decide the same.
 *
 * Every store answer carries the store's clock, read between our send and our receipt, so
 * `store − local at receipt` is a lower bound of the true offset; the largest sample of the last
 * 10 s is the estimate (a slow reply only makes a sample smaller).
 */
const WINDOW_MS = 10_000;

export class StoreClock {
  /** The estimate: the largest sample of the current window (0 until a first answer). */
  private offsetMs = 0;
  private windowStartMs = -Infinity;

  /** `localNow`: this process's clock (ms since the epoch). */
  constructor(private readonly localNow: () => number) {}

  /** A store answer that read its clock as `storeNowMs` arrived at `receivedAtMs` (local). */
  observe(storeNowMs: number, receivedAtMs: number = this.localNow()): void {
    const sample = storeNowMs - receivedAtMs;
    if (receivedAtMs - this.windowStartMs > WINDOW_MS) {
      this.windowStartMs = receivedAtMs;
      this.offsetMs = sample;
    } else if (sample > this.offsetMs) {
      this.offsetMs = sample;
    }
  }

  /** The store's time now (or at the local instant `localMs`). */
  now(localMs: number = this.localNow()): number {
    return localMs + this.offsetMs;
  }
}
