/**
 * Time as an argument (docs/testing.md): every wait in the SDK goes through a Clock, so tests can replace
 * it with a fake one and assert delays without sleeping. Only web-standard timers are used.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason if it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

export const realClock: Clock = {
  now: () => Date.now(),
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortReason(signal!));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, Math.max(0, ms));
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
};

/**
 * A signal that aborts when `parent` does or after `ms` (whichever first), and a `clear` that
 * stops the timer. AbortSignal.any/timeout are newer than some runtimes this SDK supports.
 */
export function deadlineSignal(ms: number, parent?: AbortSignal, reason = `timed out after ${ms} ms`): { signal: AbortSignal; clear: () => void } {
  const controller = new AbortController();
  const onAbort = () => controller.abort(abortReason(parent!));
  if (parent?.aborted) controller.abort(abortReason(parent));
  else parent?.addEventListener("abort", onAbort, { once: true });
  const timer = Number.isFinite(ms) ? setTimeout(() => controller.abort(new DOMException(reason, "TimeoutError")), Math.max(0, ms)) : undefined;
  return {
    signal: controller.signal,
    clear() {
      if (timer !== undefined) clearTimeout(timer);
      parent?.removeEventListener("abort", onAbort);
    },
  };
}
