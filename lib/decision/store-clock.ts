/**
 * The counter store's clock, as seen from this process (#17 defect 7): every time-dependent
 * choice on the decision path — which overrides are live, the usage minute, the local store of
 * failure mode `local` — uses the store's time, never this server's. Windows and quota periods are
 * decided inside the store already (Redis TIME in the script); this is for the choices made before
 * or without the store call. With one server's clock 30 s ahead, its decisions must not differ.
 *
 * Every store answer carries the store's clock (StoreDecision.nowMs), read between our send and
 * our receipt, so `store − local at receipt` is a lower bound of the true offset, exact up to the
 * reply's way back; the largest sample of the last 10 s is the estimate (a slow reply only ever
 * makes a sample smaller). Until a first answer, the offset is 0: the wiring asks once at start.
 */
const WINDOW_MS = 10_000;

export class StoreClock {
  private offsetMs = 0;
  private windowStartMs = -Infinity;
  private windowMaxMs = -Infinity;

  /** `localNow`: this process's clock (ms since the epoch). */
  constructor(private readonly localNow: () => number) {}

  /** A store answer that read its clock as `storeNowMs` arrived at `receivedAtMs` (local). */
  observe(storeNowMs: number, receivedAtMs: number = this.localNow()): void {
    const sample = storeNowMs - receivedAtMs;
    if (receivedAtMs - this.windowStartMs > WINDOW_MS) {
      this.windowStartMs = receivedAtMs;
      this.windowMaxMs = sample;
    } else if (sample > this.windowMaxMs) {
      this.windowMaxMs = sample;
    }
    this.offsetMs = this.windowMaxMs;
  }

  /** The store's time now (or at the local instant `localMs`). */
  now(localMs: number = this.localNow()): number {
    return localMs + this.offsetMs;
  }
}
