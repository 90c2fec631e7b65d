/**
 * Races a promise against a timer: rejects with `timeoutError()` after `ms`, else settles as the
 * promise does (a non-Error rejection wrapped in an Error). The promise itself is not cancelled.
 * Used by the decision engine's store budget and the single-node server's Postgres reads.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, timeoutError: () => Error, options: { unref?: boolean } = {}): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(timeoutError()), ms);
    if (options.unref) timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
