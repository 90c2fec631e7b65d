/**
 * TESTS ONLY: a counter store that counts its calls and can fail on demand — `error` rejects at
 * once (Redis refusing), `hang` never answers but honours the port's budget
 * (CheckOptions.timeoutMs → StoreTimeoutError), as the Redis store does (lib/decision/
 * budget.int.test.ts pauses a real redis-server).
 */
import { StoreTimeoutError, type CheckOptions, type CounterStore, type LimitCheck, type StoreDecision } from "../../store/types";

export class CountingStore implements CounterStore {
  calls = 0;
  fail: "no" | "error" | "hang" = "no";
  constructor(private readonly inner: CounterStore) {}
  check(checks: readonly LimitCheck[], options: CheckOptions): Promise<StoreDecision> {
    this.calls++;
    if (this.fail === "error") return Promise.reject(new Error("ECONNREFUSED"));
    if (this.fail === "hang") {
      return new Promise((_resolve, reject) => {
        if (options.timeoutMs !== undefined) setTimeout(() => reject(new StoreTimeoutError()), options.timeoutMs);
      });
    }
    return this.inner.check(checks, options);
  }
  release(leaseId: string) {
    return this.inner.release(leaseId);
  }
  settle(reservationId: string, actualCost: number) {
    return this.inner.settle(reservationId, actualCost);
  }
  close() {
    return this.inner.close();
  }
}
